package sql_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// scheduledRuns returns the scheduled runs of a job, oldest first.
func scheduledRuns(t testing.TB, db *sql.DB, jobID int64) []*chronos.Run {
	t.Helper()
	var out []*chronos.Run
	cursor := ""
	for {
		runs, next, err := db.Runs(t.Context(), jobID, sql.RunFilter{Cursor: cursor, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, runs...)
		if next == "" {
			break
		}
		cursor = next
	}
	slices.SortFunc(out, func(a, b *chronos.Run) int { return a.ScheduledAt.Compare(b.ScheduledAt) })
	return out
}

// randomJob draws a cron job from expressions, zones and policies that
// exercise every rule of the timetable.
func randomJob(r *rand.Rand, base time.Time) *chronos.Job {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	var expr string
	switch r.IntN(6) {
	case 0:
		expr = pick("@midnight", "@hourly", "@daily", "@weekly", "@every 90m", "@every 7h", "@every 45s", "@every 25h")
	default:
		expr = fmt.Sprintf("%s %s %s %s %s",
			pick("0", "*/7", "15,45", "30", "5-10", "*/20"),
			pick("*", "*/3", "2", "1,13", "9-17", "1", "*/5"),
			pick("*", "*", "*", "L", "LW", "L-2", "15W", "1,15", "?"),
			pick("*", "*", "*/2", "3,11", "10-12"),
			pick("*", "*", "1-5", "0", "5L", "1#2", "*"))
	}
	j := &chronos.Job{Name: "random", TargetURL: "http://127.0.0.1:9/hook", Enabled: true, CronExpr: &expr,
		Timezone: pick("UTC", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "America/Sao_Paulo",
			"Asia/Kathmandu", "Pacific/Chatham", "America/Santiago")}
	if r.IntN(2) == 0 {
		s := base.Add(time.Duration(r.IntN(90*24)) * time.Hour).Add(time.Duration(r.IntN(3600)) * time.Second)
		j.StartsAt = &s
	}
	if r.IntN(3) == 0 {
		e := base.Add(time.Duration(100+r.IntN(200*24)) * time.Hour)
		if j.StartsAt == nil || e.After(*j.StartsAt) {
			j.EndsAt = &e
		}
	}
	for range r.IntN(4) {
		from := base.AddDate(0, 0, r.IntN(200))
		j.Exclude = append(j.Exclude, chronos.DateRange{From: from.Format("2006-01-02"),
			To: from.AddDate(0, 0, r.IntN(10)).Format("2006-01-02")})
	}
	j.Misfire = []chronos.MisfirePolicy{chronos.MisfireOne, chronos.MisfireNone, chronos.MisfireAll}[r.IntN(3)]
	if r.IntN(2) == 0 {
		j.StartingDeadlineSeconds = ptr(1 + r.IntN(600))
	}
	j.JitterSeconds = r.IntN(30)
	j.ApplyDefaults()
	return j
}

// The preview is what the materializer creates (issue 14): for many random
// expressions, zones and policies, the job's 100 previewed fire times are
// exactly the scheduled_at of the runs the materializer creates over the
// same stretch, each run available at its jittered instant.
func TestPreviewEqualsMaterialized(t *testing.T) {
	db, ctx := parallelDB(t)
	r := rand.New(rand.NewPCG(14, uint64(time.Now().UnixNano())))
	base := dbNow(t, db)
	checked := 0
	for i := 0; checked < 60 && i < 400; i++ {
		j := randomJob(r, base)
		if err := db.CreateJob(ctx, j); err != nil {
			if chronos.ErrorCode(err) == chronos.EINVALID {
				continue // e.g. jitter not below a dense schedule's gap, or past its ends_at
			}
			t.Fatal(err)
		}
		p, err := j.Preview(j.CreatedAt, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.FireTimes) == 0 || !p.FireTimes[0].Equal(*j.NextRunAt) {
			t.Fatalf("job %+v: preview starts %v, next_run_at %v", j, p.FireTimes, j.NextRunAt)
		}
		last := p.FireTimes[len(p.FireTimes)-1]
		// One pass over the whole stretch, as the leader would make over
		// time; the clock stays at creation so nothing is late.
		if _, err := db.Materialize(ctx, j.CreatedAt, last.Sub(j.CreatedAt), 1000); err != nil {
			t.Fatal(err)
		}
		runs := scheduledRuns(t, db, j.ID)
		got := make([]time.Time, len(runs))
		for k, run := range runs {
			got[k] = run.ScheduledAt
			if want := j.FireAt(run.ScheduledAt); !run.AvailableAt.Equal(want) {
				t.Fatalf("job %d run at %v available %v, want %v (jitter %ds)", j.ID, run.ScheduledAt, run.AvailableAt, want, j.JitterSeconds)
			}
		}
		if !slices.EqualFunc(got, p.FireTimes, time.Time.Equal) {
			t.Fatalf("job %q in %s (starts %v, ends %v, exclude %v):\npreview     %v\nmaterialized %v",
				*j.CronExpr, j.Timezone, j.StartsAt, j.EndsAt, j.Exclude, p.FireTimes, got)
		}
		if err := db.DeleteJob(ctx, j.ID); err != nil {
			t.Fatal(err)
		}
		checked++
	}
	if checked < 60 {
		t.Fatalf("only %d random jobs were valid", checked)
	}
}

// After ends_at the job stays, finished, with no next run.
func TestEndsAtFinishesTheJob(t *testing.T) {
	db, ctx := parallelDB(t)
	now := dbNow(t, db).Truncate(time.Second)
	j := cronJob("* * * * * *")
	j.EndsAt = ptr(now.Add(3 * time.Second))
	mustCreate(t, db, j)
	if j.State != chronos.StateScheduled {
		t.Fatalf("state %q", j.State)
	}
	// The job may have been created in the second after now: its first
	// occurrence is set, so exactly now+1s .. now+3s remain.
	setNextRunAt(t, db, j.ID, ptr(now.Add(time.Second)))
	res, err := db.Materialize(ctx, now, 10*time.Second, 10)
	if err != nil || res.Created != 3 {
		t.Fatalf("materialize: %+v %v", res, err)
	}
	got, err := db.Job(ctx, j.ID)
	if err != nil || got.NextRunAt != nil || got.State != chronos.StateFinished {
		t.Fatalf("after ends_at: next %v state %q (%v)", got.NextRunAt, got.State, err)
	}
	// The unscheduled sweep leaves it alone.
	if _, err := db.Materialize(ctx, now.Add(time.Minute), time.Second, 10); err != nil {
		t.Fatal(err)
	}
	if got, _ = db.Job(ctx, j.ID); got.NextRunAt != nil {
		t.Fatalf("a finished job was rescheduled to %v", got.NextRunAt)
	}
	// Moving ends_at reopens it.
	got, err = db.UpdateJob(ctx, j.ID, &chronos.JobUpdate{EndsAt: chronos.Opt[time.Time]{Set: true, Null: true}})
	if err != nil || got.NextRunAt == nil || got.State != chronos.StateScheduled {
		t.Fatalf("reopened: %+v %v", got, err)
	}
	// A job created past its ends_at is a 400 naming it.
	late := cronJob("0 0 * * *")
	late.EndsAt = ptr(now.Add(-time.Hour))
	err = db.CreateJob(ctx, late)
	wantCode(t, err, chronos.EINVALID)
	if e := err.(*chronos.Error); e.Fields["ends_at"] == "" {
		t.Fatalf("error %v does not name ends_at", err)
	}
}

// Excluded occurrences are not created, and are counted by job.
func TestExcludedOccurrencesCounted(t *testing.T) {
	db, ctx := parallelDB(t)
	j := cronJob("0 * * * *")
	// The day after tomorrow, not tomorrow: created in the last hour of a
	// day, the job's first occurrence is tomorrow's midnight, so an
	// excluded tomorrow would be skipped at create, before the
	// materializer could count it (CI failed so at 23:41 UTC).
	excluded := dbNow(t, db).AddDate(0, 0, 2)
	j.Exclude = []chronos.DateRange{{From: excluded.Format("2006-01-02"), To: excluded.Format("2006-01-02")}}
	mustCreate(t, db, j)
	start := *j.NextRunAt
	res, err := db.Materialize(ctx, start, 72*time.Hour, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Missed[j.ID][chronos.SkipExcluded]; got != 24 {
		t.Fatalf("excluded %d, want 24 (%+v)", got, res.Missed)
	}
	for _, run := range res.Runs {
		if run.ScheduledAt.Format("2006-01-02") == excluded.Format("2006-01-02") {
			t.Fatalf("a run on an excluded date: %v", run.ScheduledAt)
		}
	}
}

// misfire none skips the gap (counting it, with the runs created ahead
// before it); all runs each missed occurrence, the latest 100 at most.
func TestMisfirePolicies(t *testing.T) {
	db, ctx := parallelDB(t)
	now := time.Date(2026, 6, 1, 12, 0, 30, 0, time.UTC)

	none := cronJob("* * * * *")
	none.Misfire = chronos.MisfireNone
	mustCreate(t, db, none)
	setNextRunAt(t, db, none.ID, ptr(now.Add(-10*time.Minute-30*time.Second))) // 11 missed: 11:50..12:00
	all := cronJob("* * * * *")
	all.Misfire = chronos.MisfireAll
	mustCreate(t, db, all)
	setNextRunAt(t, db, all.ID, ptr(now.Add(-10*time.Minute-30*time.Second)))
	many := cronJob("* * * * *")
	many.Misfire = chronos.MisfireAll
	mustCreate(t, db, many)
	setNextRunAt(t, db, many.ID, ptr(now.Add(-3*time.Hour-30*time.Second))) // 181 missed

	res, err := db.Materialize(ctx, now, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(scheduledRuns(t, db, none.ID)); n != 0 || res.Missed[none.ID][chronos.SkipMisfire] != 11 {
		t.Fatalf("none: %d runs, missed %v", n, res.Missed[none.ID])
	}
	runs := scheduledRuns(t, db, all.ID)
	if len(runs) != 11 || !runs[0].ScheduledAt.Equal(now.Add(-10*time.Minute-30*time.Second)) || !runs[10].CatchUp {
		t.Fatalf("all: %d runs from %v", len(runs), runs)
	}
	runs = scheduledRuns(t, db, many.ID)
	if len(runs) != chronos.MaxMisfireRuns || !runs[99].ScheduledAt.Equal(now.Add(-30*time.Second)) ||
		res.Missed[many.ID][chronos.SkipMisfire] != 81 {
		t.Fatalf("all, capped: %d runs ending %v, missed %v", len(runs), runs[len(runs)-1].ScheduledAt, res.Missed[many.ID])
	}
	for _, id := range []int64{none.ID, all.ID, many.ID} {
		if j, _ := db.Job(ctx, id); !j.NextRunAt.Equal(now.Add(30 * time.Second)) {
			t.Fatalf("job %d resumes at %v", id, j.NextRunAt)
		}
	}
	if len(res.CatchUps) != 0 {
		t.Fatalf("catch-ups %+v under none/all", res.CatchUps)
	}
}

// gapAfterRunsAhead: a job every second under misfire, whose two runs at
// t0 and t0+1 s the leader created ahead before it went away; the next
// materialization comes gap (and 300 ms) after t0. What it returned.
func gapAfterRunsAhead(t *testing.T, misfire chronos.MisfirePolicy, gap time.Duration) (*sql.DB, context.Context, *chronos.Job, time.Time, sql.MaterializeResult) {
	t.Helper()
	db, ctx, j := parallelJob(t, "* * * * * *", func(j *chronos.Job) { j.Misfire = misfire })
	t0 := dbNow(t, db).Truncate(time.Second).Add(time.Minute)
	setNextRunAt(t, db, j.ID, ptr(t0))
	if res, err := db.Materialize(ctx, t0.Add(-500*time.Millisecond), 2*time.Second, 10); err != nil || res.Created != 2 {
		t.Fatalf("created ahead: %+v %v", res, err)
	}
	res, err := db.Materialize(ctx, t0.Add(gap+300*time.Millisecond), 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	return db, ctx, j, t0, res
}

// misfire none also drops the runs created ahead before the gap.
func TestMisfireNoneDropsRunsCreatedAhead(t *testing.T) {
	db, _, j, _, res := gapAfterRunsAhead(t, chronos.MisfireNone, 10*time.Second)
	if n := len(scheduledRuns(t, db, j.ID)); n != 0 {
		t.Fatalf("%d runs left", n)
	}
	// 2 created ahead (t0, t0+1) and t0+2 .. t0+10 in the gap.
	if got := res.Missed[j.ID][chronos.SkipMisfire]; got != 11 {
		t.Fatalf("missed %d, want 11", got)
	}
}

// A run that cannot start within starting_deadline_seconds is not claimed
// and ends missed; an occurrence already past it is not created.
func TestStartingDeadline(t *testing.T) {
	db, ctx, j := parallelJob(t, "* * * * *", func(j *chronos.Job) { j.StartingDeadlineSeconds = ptr(5) })
	now := dbNow(t, db)
	// A run created earlier, due 10 s ago: past its deadline.
	setNextRunAt(t, db, j.ID, ptr(now.Add(-10*time.Second)))
	insertScheduled(t, db, j.ID, now.Add(-10*time.Second))
	setNextRunAt(t, db, j.ID, ptr(now.Add(time.Hour)))
	if c, err := db.Claim(ctx, "w", 10, time.Minute); err != nil || len(c) != 0 {
		t.Fatalf("claimed a run past its deadline: %v %v", c, err)
	}
	if at, err := db.NextAvailable(ctx); err != nil || at != nil {
		t.Fatalf("next available %v %v", at, err)
	}
	res, err := db.Materialize(ctx, time.Time{}, 0, 10)
	if err != nil || res.Missed[j.ID][chronos.SkipDeadline] != 1 {
		t.Fatalf("materialize: %+v %v", res, err)
	}
	runs := scheduledRuns(t, db, j.ID)
	if len(runs) != 1 || runs[0].Status != chronos.StatusMissed || runs[0].FinishedAt == nil || runs[0].AttemptCount != 0 {
		t.Fatalf("run %+v, want missed", runs[0])
	}
	// The next occurrence is 30 s late at the next tick: not created. (A
	// minute's occurrence, 30 s before the clock the call is given: one
	// occurrence late, no gap.)
	occ := now.Truncate(time.Minute).Add(time.Hour)
	setNextRunAt(t, db, j.ID, ptr(occ))
	res, err = db.Materialize(ctx, occ.Add(30*time.Second), 0, 10)
	if err != nil || res.Created != 0 || res.Missed[j.ID][chronos.SkipDeadline] != 1 {
		t.Fatalf("late occurrence: %+v %v", res, err)
	}
	// Missed runs are terminal: pruned like the others.
	if res, err := db.PruneRunPartitions(ctx, -time.Hour); err != nil {
		t.Fatalf("pruned %+v %v", res, err)
	}
	var left int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM job_runs WHERE job_id = $1", j.ID).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d missed runs left after the prune (%v)", left, err)
	}
}

// Jittered runs keep their nominal scheduled_at and become available at
// scheduled_at + jitter, the same on every materialization.
func TestJitterDelaysAvailability(t *testing.T) {
	db, ctx, j := parallelJob(t, "0 * * * *", func(j *chronos.Job) { j.JitterSeconds = 1800 })
	res, err := db.Materialize(ctx, *j.NextRunAt, 10*time.Hour, 10)
	if err != nil || res.Created != 11 {
		t.Fatalf("materialize: %+v %v", res, err)
	}
	spread := map[time.Duration]bool{}
	for _, r := range res.Runs {
		d := r.AvailableAt.Sub(r.ScheduledAt)
		if r.FireAt == nil || !r.FireAt.Equal(r.AvailableAt) {
			t.Fatalf("run shows fire_at %v, available_at %v", r.FireAt, r.AvailableAt)
		}
		if d < 0 || d >= 30*time.Minute || r.ScheduledAt.Minute() != 0 || d != chronos.Jitter(j.ID, r.ScheduledAt, 1800) {
			t.Fatalf("run at %v available %v", r.ScheduledAt, r.AvailableAt)
		}
		spread[d] = true
	}
	if len(spread) < 5 {
		t.Fatalf("jitter took %d distinct values over 11 occurrences", len(spread))
	}
}

// misfire all keeps the runs created ahead before the gap (they run, once
// the claim releases them) and adds a run for each occurrence missed after
// them; all of them are flagged catch-ups (issue 22.5: the runs created
// before the gap are among the missed occurrences), and the chain starts
// at the earliest.
func TestMisfireAllKeepsRunsCreatedAhead(t *testing.T) {
	db, ctx, j, t0, res := gapAfterRunsAhead(t, chronos.MisfireAll, 5*time.Second)
	runs := scheduledRuns(t, db, j.ID)
	if len(runs) != 6 || len(res.CatchUps) != 0 || len(res.Missed) != 0 {
		t.Fatalf("%d runs (want t0..t0+5), catch-ups %v, missed %v", len(runs), res.CatchUps, res.Missed)
	}
	for i, r := range runs {
		if want := t0.Add(time.Duration(i) * time.Second); !r.ScheduledAt.Equal(want) || !r.CatchUp {
			t.Fatalf("run %d at %v catch_up %v, want %v, flagged", i, r.ScheduledAt, r.CatchUp, want)
		}
	}
	var at *time.Time
	if err := db.Pool.QueryRow(ctx, "SELECT catch_up_at FROM job_schedules WHERE job_id = $1", j.ID).Scan(&at); err != nil ||
		at == nil || !at.Equal(t0) {
		t.Fatalf("catch_up_at %v (%v), want %v", at, err, t0)
	}
}

// misfire all: the catch-up runs of a gap are claimable one at a time, in
// order: the next only after the previous one has finished and a
// materializer call has moved the chain on (issue 22.5). A retry keeps
// its run current.
func TestMisfireAllClaimsCatchUpsInOrder(t *testing.T) {
	db, ctx, j := parallelJob(t, "* * * * *", func(j *chronos.Job) {
		j.Misfire = chronos.MisfireAll
		j.MaxRetries = 3
	})
	// Not near the end of a minute: the next occurrence must not come
	// while the test runs.
	var now time.Time
	deadline := time.Now().Add(30 * time.Second)
	for now = dbNow(t, db); now.Second() >= 50; now = dbNow(t, db) {
		if time.Now().After(deadline) {
			t.Fatal("the database's clock stands still")
		}
		time.Sleep(100 * time.Millisecond) // polling the clock, bounded above
	}
	t0 := now.Truncate(time.Minute).Add(-5 * time.Minute)
	setNextRunAt(t, db, j.ID, ptr(t0))
	// The leader created two runs ahead, then the cluster stopped for a
	// few minutes.
	if res, err := db.Materialize(ctx, t0.Add(-30*time.Second), 2*time.Minute, 10); err != nil || res.Created != 2 {
		t.Fatalf("created ahead: %+v %v", res, err)
	}
	if _, err := db.Materialize(ctx, time.Time{}, 0, 10); err != nil {
		t.Fatal(err)
	}
	fail := true
	for i := range 6 {
		want := t0.Add(time.Duration(i) * time.Minute)
		cs, err := db.Claim(ctx, "w", 10, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) != 1 || !cs[0].Run.ScheduledAt.Equal(want) || !cs[0].Run.CatchUp {
			var got []time.Time
			for _, c := range cs {
				got = append(got, c.Run.ScheduledAt)
			}
			t.Fatalf("claim %d took %v, want the catch-up at %v alone", i, got, want)
		}
		now := time.Now()
		out := sql.Outcome{Lease: cs[0].Lease(), Success: !fail, StatusCode: 204, StartedAt: now, FinishedAt: now}
		if fail {
			// The first attempt of the first catch-up fails: its retry
			// is still the one that may run.
			out.StatusCode, out.Error = 500, "boom"
			if _, err := db.Complete(ctx, []sql.Outcome{out}); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Materialize(ctx, time.Time{}, 0, 10); err != nil {
				t.Fatal(err)
			}
			if cs, err := db.Claim(ctx, "w", 10, time.Minute); err != nil || len(cs) != 1 || !cs[0].Run.ScheduledAt.Equal(want) {
				var got []string
				for _, c := range cs {
					got = append(got, fmt.Sprintf("%v/%s/catch_up=%v", c.Run.ScheduledAt, c.Run.Trigger, c.Run.CatchUp))
				}
				t.Fatalf("after a failed attempt the claim took %v (%v), want the retry of %v", got, err, want)
			} else {
				out = sql.Outcome{Lease: cs[0].Lease(), Success: true, StatusCode: 204, StartedAt: now, FinishedAt: now}
			}
			fail = false
		}
		if _, err := db.Complete(ctx, []sql.Outcome{out}); err != nil {
			t.Fatal(err)
		}
		if cs, err := db.Claim(ctx, "w", 10, time.Minute); err != nil || len(cs) != 0 {
			t.Fatalf("before the chain moved on the claim took %d runs (%v), want none", len(cs), err)
		}
		if _, err := db.Materialize(ctx, time.Time{}, 0, 10); err != nil {
			t.Fatal(err)
		}
	}
	var at *time.Time
	if err := db.Pool.QueryRow(ctx, "SELECT catch_up_at FROM job_schedules WHERE job_id = $1", j.ID).Scan(&at); err != nil || at != nil {
		t.Fatalf("catch_up_at %v (%v) after the chain, want null", at, err)
	}
}
