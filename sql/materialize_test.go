package sql_test

import (
	"sync"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

func countRuns(t testing.TB, db *sql.DB, jobID int64) (total, catchUp int) {
	t.Helper()
	err := db.Pool.QueryRow(t.Context(), "SELECT count(*), count(*) FILTER (WHERE catch_up) FROM job_runs WHERE job_id = $1", jobID).Scan(&total, &catchUp)
	if err != nil {
		t.Fatal(err)
	}
	return total, catchUp
}

// Two materializers at once (two leaders) never create a run twice.
func TestMaterializeConcurrentIdempotent(t *testing.T) {
	db, ctx := parallelDB(t)
	now := time.Now().UTC().Truncate(time.Second)
	var ids []int64
	for range 40 {
		j := mustCreate(t, db, cronJob("* * * * * *"))
		setNextRunAt(t, db, j.ID, ptr(now))
		ids = append(ids, j.ID)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				res, err := db.Materialize(ctx, now, 2*time.Second, 7)
				if err != nil {
					t.Error(err)
					return
				}
				if res.Jobs < 7 {
					return
				}
			}
		})
	}
	wg.Wait()
	// A stale repeat (as if a leader re-ran a tick from old state) inserts nothing.
	for _, id := range ids {
		setNextRunAt(t, db, id, ptr(now))
	}
	res, err := db.Materialize(ctx, now, 2*time.Second, 100)
	if err != nil || res.Created != 0 || res.Jobs != 40 {
		t.Fatalf("repeat: %+v %v", res, err)
	}
	var dups int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM (SELECT job_id, scheduled_at FROM job_runs GROUP BY 1, 2 HAVING count(*) > 1) d").Scan(&dups); err != nil || dups != 0 {
		t.Fatalf("%d duplicated occurrences (%v)", dups, err)
	}
	for _, id := range ids {
		// now, now+1s, now+2s: pre-created through the lookahead.
		if n, _ := countRuns(t, db, id); n != 3 {
			t.Fatalf("job %d has %d runs, want 3", id, n)
		}
		j, err := db.Job(ctx, id)
		if err != nil || !j.NextRunAt.Equal(now.Add(3*time.Second)) {
			t.Fatalf("next_run_at %v, want %v (%v)", j.NextRunAt, now.Add(3*time.Second), err)
		}
	}
}

func TestMaterializeCatchUpAfterGap(t *testing.T) {
	db, ctx := parallelDB(t)
	now := time.Date(2026, 6, 1, 12, 0, 30, 0, time.UTC)
	j := mustCreate(t, db, cronJob("* * * * *"))
	setNextRunAt(t, db, j.ID, ptr(now.Add(-3*time.Hour-30*time.Second))) // 180 occurrences missed
	res, err := db.Materialize(ctx, now, time.Second, 10)
	if err != nil || res.Created != 1 || len(res.Runs) != 1 {
		t.Fatalf("materialize after gap: %+v %v", res, err)
	}
	r := res.Runs[0]
	if !r.CatchUp || !r.ScheduledAt.Equal(now.Add(-30*time.Second)) || r.Trigger != chronos.TriggerSchedule {
		t.Fatalf("catch-up run %+v: want the latest missed occurrence %v", r, now.Add(-30*time.Second))
	}
	got, err := db.Job(ctx, j.ID)
	if err != nil || !got.NextRunAt.Equal(now.Add(30*time.Second)) {
		t.Fatalf("resumes at %v, want %v (%v)", got.NextRunAt, now.Add(30*time.Second), err)
	}
	// A worker takes the catch-up (a run left pending for a minute would
	// itself be missed); then the schedule resumes normally, without the
	// flag.
	if _, err := db.Pool.Exec(ctx, "UPDATE job_runs SET status = 'succeeded', finished_at = now() WHERE id = $1", r.ID); err != nil {
		t.Fatal(err)
	}
	res, err = db.Materialize(ctx, now.Add(31*time.Second), time.Second, 10)
	if err != nil || res.Created != 1 || res.Runs[0].CatchUp {
		t.Fatalf("resume: %+v %v", res, err)
	}
	// One late occurrence (no gap) is not a catch-up.
	j2 := mustCreate(t, db, cronJob("0 * * * *"))
	setNextRunAt(t, db, j2.ID, ptr(now.Add(-30*time.Second).Truncate(time.Hour)))
	res, err = db.Materialize(ctx, now, 0, 10)
	if err != nil || res.Created != 1 || res.Runs[0].CatchUp || res.Runs[0].JobID != j2.ID {
		t.Fatalf("late single occurrence: %+v %v", res, err)
	}
}

func TestMaterializeOneShotOnce(t *testing.T) {
	db, ctx := parallelDB(t)
	now := time.Now().UTC()
	j := cronJob("")
	j.RunAt = ptr(now.Add(500 * time.Millisecond).Truncate(time.Millisecond))
	mustCreate(t, db, j)
	res, err := db.Materialize(ctx, now, 0, 10)
	if err != nil || res.Created != 0 || res.Jobs != 0 {
		t.Fatalf("before due, no lookahead: %+v %v", res, err)
	}
	res, err = db.Materialize(ctx, now, time.Second, 10) // within lookahead: pre-created
	if err != nil || res.Created != 1 || !res.Runs[0].AvailableAt.Equal(*j.RunAt) {
		t.Fatalf("one-shot: %+v %v", res, err)
	}
	for range 3 {
		res, err = db.Materialize(ctx, now.Add(time.Hour), time.Hour, 10)
		if err != nil || res.Created != 0 {
			t.Fatalf("materialized again: %+v %v", res, err)
		}
	}
	got, err := db.Job(ctx, j.ID)
	if err != nil || got.NextRunAt != nil {
		t.Fatalf("one-shot next_run_at %v (%v), want null", got.NextRunAt, err)
	}
}

func TestMaterializeOverlapQueueOne(t *testing.T) {
	db, ctx := parallelDB(t)
	now := time.Now().UTC().Truncate(time.Second)
	j := cronJob("* * * * * *")
	j.Overlap = chronos.OverlapQueueOne
	mustCreate(t, db, j)
	setNextRunAt(t, db, j.ID, ptr(now))
	res, err := db.Materialize(ctx, now, 5*time.Second, 10)
	if err != nil || res.Created != 1 || res.Skipped != 0 {
		t.Fatalf("first: %+v %v", res, err)
	}
	// Lease it: it is active but no longer waiting, so one may queue behind it.
	if _, err := db.Claim(ctx, "w", 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	res, err = db.Materialize(ctx, now.Add(time.Second), 0, 10)
	if err != nil || res.Created != 1 {
		t.Fatalf("queue one behind the active: %+v %v", res, err)
	}
	res, err = db.Materialize(ctx, now.Add(2*time.Second), 0, 10)
	if err != nil || res.Created != 0 || res.Skipped != 1 {
		t.Fatalf("a second waiting run: %+v %v", res, err)
	}
	// Nothing due now and the future is held back: the job is not even examined.
	res, err = db.Materialize(ctx, now.Add(2*time.Second), 5*time.Second, 10)
	if err != nil || res.Jobs != 0 {
		t.Fatalf("held job examined: %+v %v", res, err)
	}
}

// An enabled cron job with no next_run_at gets one again.
func TestMaterializeUnsticksNullNextRunAt(t *testing.T) {
	db, ctx, j := parallelJob(t, "* * * * * *")
	setNextRunAt(t, db, j.ID, nil)
	now := time.Now().UTC()
	if _, err := db.Materialize(ctx, now, 0, 10); err != nil {
		t.Fatal(err)
	}
	got, err := db.Job(ctx, j.ID)
	if err != nil || got.NextRunAt == nil || !got.NextRunAt.After(now) {
		t.Fatalf("still stuck: %v %v", got.NextRunAt, err)
	}
}
