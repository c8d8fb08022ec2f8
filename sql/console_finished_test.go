package sql_test

import (
	"math"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

func TestLagBucketsKeepTheirPrecision(t *testing.T) {
	t.Parallel()
	for d := 100 * time.Microsecond; d < 48*time.Hour; d = d * 107 / 100 {
		got := sql.LagOf(sql.LagBucket(d))
		if rel := math.Abs(float64(got-d)) / float64(d); rel > 0.016 {
			t.Errorf("lag %v stands as %v in its bucket: %.1f%% off", d, got, rel*100)
		}
	}
	if sql.LagBucket(-time.Second) != sql.LagBucket(0) || sql.LagBucket(0) != sql.LagBucket(50*time.Microsecond) {
		t.Error("lags under a tenth of a millisecond (or negative) do not share the lowest bucket")
	}
}

func TestFinishedBetweenCountsByMinuteOutcomeAndLag(t *testing.T) {
	db, ctx := parallelDB(t)
	j := mustCreate(t, db, cronJob("0 3 * * *"))
	now, err := db.Now(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m := now.Truncate(time.Minute).Add(-10 * time.Minute)
	// finished at (after m), status, trigger, lag
	for _, r := range []struct {
		after   time.Duration
		status  chronos.RunStatus
		trigger chronos.Trigger
		lag     time.Duration
	}{
		{-time.Second, chronos.StatusSucceeded, chronos.TriggerSchedule, time.Millisecond}, // before since
		{time.Second, chronos.StatusSucceeded, chronos.TriggerSchedule, 20 * time.Millisecond},
		{2 * time.Second, chronos.StatusSucceeded, chronos.TriggerSchedule, 20 * time.Millisecond},
		{3 * time.Second, chronos.StatusDead, chronos.TriggerSchedule, 3 * time.Second},
		{4 * time.Second, chronos.StatusSucceeded, chronos.TriggerManual, time.Hour}, // no lag: not scheduled
		{61 * time.Second, chronos.StatusDead, chronos.TriggerManual, 0},
	} {
		fin := m.Add(r.after)
		started := fin.Add(-time.Millisecond)
		if _, err := db.Pool.Exec(ctx, `INSERT INTO job_runs (job_id, scheduled_at, trigger, status, attempt_count, started_at, finished_at)
			VALUES ($1, $2, $3, $4, 1, $5, $6)`, j.ID, started.Add(-r.lag), string(r.trigger), string(r.status), started, fin); err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.FinishedBetween(ctx, m, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[0].Minute.Equal(m) || !got[1].Minute.Equal(m.Add(time.Minute)) {
		t.Fatalf("minutes %+v, want %v and the next", got, m)
	}
	if got[0].Succeeded != 3 || got[0].Dead != 1 || got[1].Succeeded != 0 || got[1].Dead != 1 {
		t.Errorf("counts %+v", got)
	}
	if only, err := db.FinishedBetween(ctx, m.Add(time.Minute), m.Add(2*time.Minute)); err != nil || len(only) != 1 || only[0].Dead != 1 {
		t.Errorf("the second minute alone: %+v, %v", only, err)
	}
	if none, err := db.FinishedBetween(ctx, m.Add(-time.Minute), m); err != nil || len(none) != 1 || none[0].Succeeded != 1 {
		t.Errorf("the minute before: %+v, %v", none, err)
	}
	want := map[int]int64{sql.LagBucket(20 * time.Millisecond): 2, sql.LagBucket(3 * time.Second): 1}
	if len(got[0].Lag) != len(want) || got[0].Lag[sql.LagBucket(20*time.Millisecond)] != 2 || got[0].Lag[sql.LagBucket(3*time.Second)] != 1 || len(got[1].Lag) != 0 {
		t.Errorf("lag histograms %v and %v, want %v and none", got[0].Lag, got[1].Lag, want)
	}
}

func TestNotesNameTheJobsAndTheNewestRedrives(t *testing.T) {
	db, ctx := parallelDB(t)
	j := mustCreate(t, db, cronJob("0 3 * * *"))
	var dead, other int64
	if err := db.Pool.QueryRow(ctx, `INSERT INTO job_runs (job_id, scheduled_at, trigger, status, attempt_count, finished_at)
		VALUES ($1, now(), 'manual', 'dead', 1, now()) RETURNING id`, j.ID).Scan(&dead); err != nil {
		t.Fatal(err)
	}
	if err := db.Pool.QueryRow(ctx, `INSERT INTO job_runs (job_id, scheduled_at, trigger, status, attempt_count, finished_at)
		VALUES ($1, now(), 'manual', 'dead', 1, now()) RETURNING id`, j.ID).Scan(&other); err != nil {
		t.Fatal(err)
	}
	first, err := db.Redrive(ctx, dead)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE job_runs SET status = 'dead', finished_at = now() WHERE id = $1`, first.ID); err != nil {
		t.Fatal(err)
	}
	second, err := db.Redrive(ctx, dead)
	if err != nil {
		t.Fatal(err)
	}
	runs, _, err := db.AllRuns(ctx, sql.RunQuery{Status: chronos.StatusDead})
	if err != nil {
		t.Fatal(err)
	}
	n, err := db.Notes(ctx, runs)
	if err != nil {
		t.Fatal(err)
	}
	if n.JobNames[j.ID] != j.Name || len(n.JobNames) != 1 {
		t.Errorf("job names %v, want %d: %s", n.JobNames, j.ID, j.Name)
	}
	if ref, ok := n.Redrives[dead]; !ok || ref.ID != second.ID || ref.Status != chronos.StatusPending {
		t.Errorf("run %d's newest redrive %+v, want %d pending", dead, ref, second.ID)
	}
	if _, ok := n.Redrives[other]; ok {
		t.Errorf("run %d, never redriven, has a redrive", other)
	}
	if empty, err := db.Notes(ctx, nil); err != nil || len(empty.JobNames) != 0 {
		t.Errorf("notes of no runs: %+v, %v", empty, err)
	}
}
