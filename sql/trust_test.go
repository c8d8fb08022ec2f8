package sql_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

func patch(t testing.TB, db *sql.DB, id int64, u *chronos.JobUpdate) *chronos.Job {
	t.Helper()
	j, err := db.UpdateJob(context.Background(), id, u)
	if err != nil {
		t.Fatalf("update job %d: %v", id, err)
	}
	return j
}

// A one-shot whose run was created ahead keeps its only run through a
// pause and resume, and through edits that do not move it (issue 11.1).
func TestOneShotKeepsItsOnlyRun(t *testing.T) {
	db, ctx := parallelDB(t)
	edits := map[string][]*chronos.JobUpdate{
		"pause and resume": {{Enabled: chronos.Some(false)}, {Enabled: chronos.Some(true)}},
		"time zone":        {{Timezone: chronos.Some("Europe/Berlin")}},
		"target":           {{TargetURL: chronos.Some("http://127.0.0.1:9/other")}},
	}
	for name, us := range edits {
		j := cronJob("")
		runAt := dbNow(t, db).Add(time.Hour).Truncate(time.Second)
		j.RunAt = &runAt
		mustCreate(t, db, j)
		// The lookahead reaches it: the run is created ahead.
		if res, err := db.Materialize(ctx, runAt.Add(-time.Second), 2*time.Second, 100); err != nil || res.Created < 1 {
			t.Fatalf("%s: materialize: %+v %v", name, res, err)
		}
		for _, u := range us {
			patch(t, db, j.ID, u)
		}
		// Until it is due, and when it is, exactly one run exists for it.
		if _, err := db.Materialize(ctx, runAt.Add(time.Second), 2*time.Second, 100); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM job_runs WHERE job_id = $1 AND scheduled_at = $2",
			j.ID, runAt).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("%s: %d runs at run_at, want exactly 1", name, n)
		}
		if got, _ := db.Job(ctx, j.ID); got.NextRunAt != nil {
			t.Errorf("%s: next_run_at %v after it materialized, want null", name, got.NextRunAt)
		}
	}
}

// A one-shot that fired stays fired through a pause and resume; a new
// run_at is a new occurrence.
func TestOneShotFiresOncePerRunAt(t *testing.T) {
	db, ctx := parallelDB(t)
	j := cronJob("")
	runAt := dbNow(t, db).Add(-time.Minute).Truncate(time.Second)
	j.RunAt = &runAt
	mustCreate(t, db, j)
	if res, err := db.Materialize(ctx, time.Time{}, 0, 10); err != nil || res.Created != 1 {
		t.Fatalf("materialize: %+v %v", res, err)
	}
	claimOne(t, db, "w", time.Minute) // due: it is in flight, not created ahead
	patch(t, db, j.ID, &chronos.JobUpdate{Enabled: chronos.Some(false)})
	got := patch(t, db, j.ID, &chronos.JobUpdate{Enabled: chronos.Some(true)})
	if got.NextRunAt != nil {
		t.Fatalf("resumed fired one-shot has next_run_at %v, want null", got.NextRunAt)
	}
	later := runAt.Add(2 * time.Hour)
	got = patch(t, db, j.ID, &chronos.JobUpdate{RunAt: chronos.Some(later)})
	if got.NextRunAt == nil || !got.NextRunAt.Equal(later) {
		t.Fatalf("new run_at: next_run_at %v, want %v", got.NextRunAt, later)
	}
}

// A paused job shows no next run; resuming a cron job starts from now,
// without catching up what was missed while paused (issue 11.6).
func TestPausedJobHasNoNextRun(t *testing.T) {
	db, ctx, j := parallelJob(t, "* * * * *")
	got := patch(t, db, j.ID, &chronos.JobUpdate{Enabled: chronos.Some(false)})
	if got.NextRunAt != nil {
		t.Fatalf("paused: next_run_at %v, want null", got.NextRunAt)
	}
	if g, _ := db.Job(ctx, j.ID); g.NextRunAt != nil {
		t.Fatalf("paused, read back: next_run_at %v, want null", g.NextRunAt)
	}
	page, _, err := db.Jobs(ctx, sql.JobFilter{})
	if err != nil || len(page) != 1 || page[0].NextRunAt != nil {
		t.Fatalf("paused, listed: %+v %v", page, err)
	}
	before := dbNow(t, db)
	got = patch(t, db, j.ID, &chronos.JobUpdate{Enabled: chronos.Some(true)})
	if got.NextRunAt == nil || !got.NextRunAt.After(before) || got.NextRunAt.Sub(before) > time.Minute {
		t.Fatalf("resumed: next_run_at %v, want the first minute after %v", got.NextRunAt, before)
	}
	// Created paused: no next run either.
	p := cronJob("* * * * *")
	p.Enabled = false
	mustCreate(t, db, p)
	if p.NextRunAt != nil {
		t.Fatalf("created paused: next_run_at %v, want null", p.NextRunAt)
	}
}

// Creating and updating jobs plans on the database's clock, not the
// process's: next_run_at is the first occurrence after the database's now.
func TestSchedulingUsesDatabaseClock(t *testing.T) {
	db, ctx, j := parallelJob(t, "* * * * * *")
	var lag time.Duration
	// created_at is the database's now() at the insert; the first
	// occurrence must be the second after the clock read just before it.
	if err := db.Pool.QueryRow(ctx, "SELECT s.next_run_at - j.created_at FROM jobs j JOIN job_schedules s ON s.job_id = j.id WHERE j.id = $1", j.ID).Scan(&lag); err != nil {
		t.Fatal(err)
	}
	if lag <= -time.Second || lag > time.Second {
		t.Fatalf("next_run_at is %s after created_at, want within a second", lag)
	}
	// Materialize with the zero time uses the database's clock: a job due
	// within the last second by that clock gets its run, no catch-up. A
	// machine that stalls across the next second between the clock read
	// and the materializer's has made that occurrence due too (a gap, by
	// right): then again, on a fresh database.
	for try := 1; ; try++ {
		now := dbNow(t, db)
		due := now.Truncate(time.Second)
		setNextRunAt(t, db, j.ID, &due)
		res, err := db.Materialize(ctx, time.Time{}, 0, 10)
		if err != nil {
			t.Fatalf("materialize on the database clock: %v", err)
		}
		if res.Now.Before(now) || res.Now.Sub(now) > time.Minute {
			t.Fatalf("materialize used %v, the database said %v", res.Now, now)
		}
		if res.Now.Sub(due) >= time.Second && try < 5 {
			t.Logf("try %d: the materializer read the clock at %v, past the next occurrence after %v; again", try, res.Now, due)
			db = sqltest.New(t)
			j = mustCreate(t, db, cronJob("* * * * * *"))
			continue
		}
		if res.Created != 1 || len(res.CatchUps) != 0 {
			t.Fatalf("materialize on the database clock: %+v, want one run and no catch-up", res)
		}
		return
	}
}

// After a gap, the runs created ahead before it that never started are
// folded into the one catch-up run: the target gets one late request
// (issue 11.5).
func TestCatchUpFoldsRunsCreatedAhead(t *testing.T) {
	db, ctx, j := parallelJob(t, "* * * * * *")
	t0 := dbNow(t, db).Truncate(time.Second).Add(time.Minute)
	setNextRunAt(t, db, j.ID, ptr(t0))
	if res, err := db.Materialize(ctx, t0.Add(-500*time.Millisecond), 2*time.Second, 10); err != nil || res.Created != 2 {
		t.Fatalf("created ahead: %+v %v", res, err)
	}
	// The cluster stops; 10 s later a leader materializes again.
	late := t0.Add(10*time.Second + 300*time.Millisecond)
	res, err := db.Materialize(ctx, late, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.CatchUps) != 1 || res.CatchUps[0].Folded != 2 || !res.CatchUps[0].At.Equal(t0.Add(10*time.Second)) {
		t.Fatalf("catch-ups %+v, want one at %v folding 2 runs", res.CatchUps, t0.Add(10*time.Second))
	}
	rows, err := db.Pool.Query(ctx, "SELECT scheduled_at, catch_up FROM job_runs WHERE job_id = $1 ORDER BY scheduled_at", j.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var at time.Time
		var cu bool
		if err := rows.Scan(&at, &cu); err != nil {
			t.Fatal(err)
		}
		if !at.After(late) && !cu {
			t.Errorf("run at %v is due and not the catch-up: the target would get it late, unflagged", at.UTC())
		}
		got = append(got, at.UTC().Format("15:04:05"))
	}
	if len(got) != 1 {
		t.Errorf("runs %v, want only the catch-up", got)
	}
}

// While a job's materialization is behind (no leader for a while), its
// scheduled runs are not claimed: the next leader may fold them.
func TestClaimHoldsRunsOfJobsBehindSchedule(t *testing.T) {
	db, ctx, j := parallelJob(t, "* * * * * *")
	now := dbNow(t, db).Truncate(time.Second)
	setNextRunAt(t, db, j.ID, ptr(now.Add(-5*time.Second)))
	insertScheduled(t, db, j.ID, now.Add(-6*time.Second))
	if c, err := db.Claim(ctx, "w", 10, time.Minute); err != nil || len(c) != 0 {
		t.Fatalf("claimed %d runs of a job behind its schedule (%v), want none", len(c), err)
	}
	if next, err := db.NextAvailable(ctx); err != nil || next != nil {
		t.Fatalf("next available %v (%v), want none", next, err)
	}
	// A manual run of the same job is not held.
	insertPending(t, db, j.ID, 1)
	if c, err := db.Claim(ctx, "w", 10, time.Minute); err != nil || len(c) != 1 || c[0].Run.Trigger != chronos.TriggerManual {
		t.Fatalf("claim: %d runs (%v), want the manual one", len(c), err)
	}
}

// With overlap queue_one (and skip), at most one run of a job is leased or
// running at any moment, whoever claims; the run waiting behind it is
// claimable once it finishes (issue 11.3).
func TestClaimOneActiveRunPerExclusiveJob(t *testing.T) {
	db, ctx := parallelDB(t)
	for _, policy := range []chronos.OverlapPolicy{chronos.OverlapQueueOne, chronos.OverlapSkip} {
		j := cronJob("")
		j.RunAt = ptr(time.Now().Add(time.Hour))
		j.Overlap = policy
		mustCreate(t, db, j)
		insertPending(t, db, j.ID, 5)
		// Eight claimers at once: exactly one run of the job is handed out.
		var (
			wg  sync.WaitGroup
			mu  sync.Mutex
			got []sql.Claimed
		)
		for i := range 8 {
			wg.Go(func() {
				c, err := db.Claim(ctx, "w"+string(rune('a'+i)), 10, time.Minute)
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				got = append(got, c...)
				mu.Unlock()
			})
		}
		wg.Wait()
		if len(got) != 1 {
			t.Fatalf("%s: %d runs claimed at once, want 1", policy, len(got))
		}
		if next, err := db.NextAvailable(ctx); err != nil || next != nil {
			t.Fatalf("%s: next available %v (%v) while the job's run is active, want none", policy, next, err)
		}
		// It finishes: the next one may go, and only one.
		res, err := db.Complete(ctx, []sql.Outcome{{Lease: got[0].Lease(), Success: true}})
		if err != nil || res[0].Err != nil {
			t.Fatalf("complete: %v %v", err, res)
		}
		c, err := db.Claim(ctx, "x", 10, time.Minute)
		if err != nil || len(c) != 1 {
			t.Fatalf("%s: after completion claimed %d (%v), want 1", policy, len(c), err)
		}
		// A release and a reclaim free the job too.
		if err := db.Release(ctx, c[0].Lease()); err != nil {
			t.Fatal(err)
		}
		c, err = db.Claim(ctx, "y", 10, time.Millisecond)
		if err != nil || len(c) != 1 {
			t.Fatalf("%s: after release claimed %d (%v), want 1", policy, len(c), err)
		}
		time.Sleep(5 * time.Millisecond) // the 1 ms lease expires
		if _, err := db.Reclaim(ctx, 10); err != nil {
			t.Fatal(err)
		}
		c, err = db.Claim(ctx, "z", 10, time.Minute)
		if err != nil || len(c) != 1 {
			t.Fatalf("%s: after reclaim claimed %d (%v), want 1", policy, len(c), err)
		}
		if _, err := db.Pool.Exec(ctx, "DELETE FROM jobs WHERE id = $1", j.ID); err != nil {
			t.Fatal(err)
		}
	}
}

// A paused job is not materialized, so its due runs are never held back
// waiting for the materializer, however its next_run_at was left (paused
// behind the API's back, with SQL).
func TestClaimDoesNotHoldRunsOfPausedJobs(t *testing.T) {
	db, ctx, j := parallelJob(t, "* * * * * *")
	now := dbNow(t, db).Truncate(time.Second)
	if _, err := db.Pool.Exec(ctx, `WITH s AS (UPDATE job_schedules SET next_run_at = $2 WHERE job_id = $1) UPDATE jobs SET enabled = false WHERE id = $1`,
		j.ID, now.Add(-5*time.Second)); err != nil {
		t.Fatal(err)
	}
	insertScheduled(t, db, j.ID, now.Add(-6*time.Second))
	if next, err := db.NextAvailable(ctx); err != nil || next == nil {
		t.Fatalf("next available %v (%v), want the paused job's due run", next, err)
	}
	if c, err := db.Claim(ctx, "w", 10, time.Minute); err != nil || len(c) != 1 {
		t.Fatalf("claimed %d runs (%v), want the paused job's due run", len(c), err)
	}
}

// A one-shot's run, whose job has no next_run_at once it materialized, is
// claimable when due: only a job whose schedule is behind holds its runs.
func TestClaimTakesOneShotRuns(t *testing.T) {
	db, ctx := parallelDB(t)
	j := cronJob("")
	j.RunAt = ptr(dbNow(t, db).Add(-time.Second))
	mustCreate(t, db, j)
	if res, err := db.Materialize(ctx, time.Time{}, 0, 10); err != nil || res.Created != 1 {
		t.Fatalf("materialize: %+v %v", res, err)
	}
	if next, err := db.NextAvailable(ctx); err != nil || next == nil {
		t.Fatalf("next available %v (%v), want the one-shot's run", next, err)
	}
	if c, err := db.Claim(ctx, "w", 10, time.Minute); err != nil || len(c) != 1 {
		t.Fatalf("claimed %d runs (%v), want the one-shot's run", len(c), err)
	}
}

// A gap is counted in occurrences missed, whether or not their runs were
// created ahead: a job every 2 s whose run for :58 was created ahead, and
// whose :00 was never created, gets one catch-up at :00 standing for both
// (found by the model test).
func TestCatchUpCountsRunsCreatedAhead(t *testing.T) {
	db, ctx, j := parallelJob(t, "*/2 * * * * *")
	t0 := dbNow(t, db).Truncate(time.Minute).Add(2 * time.Minute) // :00 of a minute ahead
	setNextRunAt(t, db, j.ID, ptr(t0.Add(-2*time.Second)))        // :58
	if res, err := db.Materialize(ctx, t0.Add(-3*time.Second), 2*time.Second, 10); err != nil || res.Created != 1 {
		t.Fatalf("created ahead: %+v %v", res, err)
	}
	// The cluster stops at :57.5 and a leader is back at :01.
	res, err := db.Materialize(ctx, t0.Add(time.Second), 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.CatchUps) != 1 || res.CatchUps[0].Folded != 1 || !res.CatchUps[0].At.Equal(t0) {
		t.Fatalf("catch-ups %+v, want one at %v folding the run for :58", res.CatchUps, t0)
	}
	total, catchUp := countRuns(t, db, j.ID)
	if total != 1 || catchUp != 1 {
		t.Fatalf("%d runs, %d catch-up; want only the catch-up", total, catchUp)
	}
	// Merely one occurrence late is not a gap: no catch-up, no fold.
	k := mustCreate(t, db, cronJob("*/2 * * * * *"))
	setNextRunAt(t, db, k.ID, ptr(t0))
	res, err = db.Materialize(ctx, t0.Add(time.Second), 0, 10)
	if err != nil || len(res.CatchUps) != 0 {
		t.Fatalf("one occurrence late: %+v %v, want its run and no catch-up", res, err)
	}
	// (The same call may create j's next run early: with no lookahead,
	// every two seconds is sparse. Only k's runs are in question.)
	if total, catchUp := countRuns(t, db, k.ID); total != 1 || catchUp != 0 {
		t.Fatalf("one occurrence late: %d runs, %d catch-ups; want its run alone", total, catchUp)
	}
}
