package sql_test

import (
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// endedJob creates a per-second cron job whose window ends at ends, with
// misfire policy misfire, and materializes it at now with a lookahead that
// reaches past ends: its last runs exist ahead, and it has no next run.
func endedJob(t *testing.T, db *sql.DB, now, ends time.Time, misfire chronos.MisfirePolicy) *chronos.Job {
	t.Helper()
	j := cronJob("* * * * * *")
	j.EndsAt, j.Misfire = &ends, misfire
	mustCreate(t, db, j)
	if _, err := db.Materialize(t.Context(), now, ends.Sub(now)+time.Second, 10); err != nil {
		t.Fatal(err)
	}
	got, err := db.Job(t.Context(), j.ID)
	if err != nil || got.NextRunAt != nil || got.State != chronos.StateFinished {
		t.Fatalf("after its last run was created: next_run_at %v, state %q (%v), want null and finished", got.NextRunAt, got.State, err)
	}
	return j
}

// TestMaterializeFoldsFinishedJobAfterGap: the runs a cron job created
// ahead of the end of its window, none started when the cluster stopped
// for longer than the lookahead, are folded by its misfire policy by the
// first pass after the gap, as a job with a next occurrence is ("one":
// the latest stays, flagged as the catch-up; "none": none stays; "all":
// all stay). Merely late (the last pass vouches for the present), they
// are left alone.
func TestMaterializeFoldsFinishedJobAfterGap(t *testing.T) {
	db, ctx := parallelDB(t)
	now := dbNow(t, db).Truncate(time.Second)
	ends := now.Add(30 * time.Second) // room for the creations on a loaded machine (5 s was not)
	one := endedJob(t, db, now, ends, chronos.MisfireOne)
	none := endedJob(t, db, now, ends, chronos.MisfireNone)
	all := endedJob(t, db, now, ends, chronos.MisfireAll)
	// Each job's first occurrence follows its creation, on the real clock.
	created, createdNone, createdAll := len(scheduledRuns(t, db, one.ID)), len(scheduledRuns(t, db, none.ID)), len(scheduledRuns(t, db, all.ID))
	if created < 2 || createdNone < 2 || createdAll < 2 {
		t.Fatalf("%d, %d and %d runs created ahead, want two at least each", created, createdNone, createdAll)
	}

	// Two seconds on, the last pass (its lookahead reached past the end)
	// still vouches: two runs due and not started are a backlog.
	res, err := db.Materialize(ctx, now.Add(2*time.Second), time.Second, 10)
	if err != nil || len(res.CatchUps) != 0 || len(scheduledRuns(t, db, one.ID)) != created {
		t.Fatalf("a pass within the vouched lookahead folded: %+v %v", res, err)
	}

	before := scheduledRuns(t, db, one.ID)
	lastAhead := before[len(before)-1].ID

	// A minute on, nothing has vouched for the present since then: a gap.
	res, err = db.Materialize(ctx, now.Add(time.Minute), time.Second, 10)
	if err != nil {
		t.Fatal(err)
	}
	rs := scheduledRuns(t, db, one.ID)
	if len(rs) != 1 || !rs[0].CatchUp || !rs[0].ScheduledAt.Equal(ends) || rs[0].ID == lastAhead {
		t.Fatalf("misfire one: runs %+v, want only a new run for %v, flagged as the catch-up", rs, ends)
	}
	if len(res.CatchUps) != 1 || res.CatchUps[0] != (sql.CatchUp{JobID: one.ID, At: ends, Folded: created - 1}) {
		t.Fatalf("catch-ups %+v, want job %d at %v folding %d", res.CatchUps, one.ID, ends, created-1)
	}
	if rs := scheduledRuns(t, db, none.ID); len(rs) != 0 || res.Missed[none.ID][chronos.SkipMisfire] != createdNone {
		t.Fatalf("misfire none: %d runs left, missed %v, want none left and %d missed", len(rs), res.Missed[none.ID], createdNone)
	}
	if rs := scheduledRuns(t, db, all.ID); len(rs) != createdAll {
		t.Fatalf("misfire all: %d runs left, want the %d created", len(rs), createdAll)
	}

	// The pass vouched again: the next one folds nothing more.
	res, err = db.Materialize(ctx, now.Add(time.Minute+time.Second), time.Second, 10)
	if err != nil || len(res.CatchUps) != 0 || len(res.Missed) != 0 {
		t.Fatalf("a second pass after the gap: %+v %v", res, err)
	}
}

// finishedWithTwoDue creates a per-second cron job whose window ended a
// moment ago (no next run) with two scheduled runs due that never
// started, at and a second later.
func finishedWithTwoDue(t *testing.T, db *sql.DB) (j *chronos.Job, at time.Time) {
	t.Helper()
	now := dbNow(t, db)
	j = mustCreate(t, db, cronJob("* * * * * *"))
	if _, err := db.Pool.Exec(t.Context(), "UPDATE jobs SET ends_at = $2 WHERE id = $1", j.ID, now.Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	setNextRunAt(t, db, j.ID, nil)
	at = now.Add(-3 * time.Second).Truncate(time.Second)
	insertScheduled(t, db, j.ID, at)
	insertScheduled(t, db, j.ID, at.Add(time.Second))
	return j, at
}

// TestClaimHoldsFinishedJobRunsUntilVouched: while no materializer pass
// vouches for the present, the claim holds back a finished cron job's
// scheduled runs (as it holds any job's that is behind), so none goes out
// before the leader has folded them; the pass that ends the gap folds them
// and vouches, and the catch-up goes. Runs of other jobs are not held.
func TestClaimHoldsFinishedJobRunsUntilVouched(t *testing.T) {
	db, ctx := parallelDB(t)
	j, at := finishedWithTwoDue(t, db)
	other := mustCreate(t, db, cronJob("0 0 1 1 *"))
	insertPending(t, db, other.ID, 1)

	// The last pass vouched until a moment ago.
	if _, err := db.Pool.Exec(ctx, "UPDATE chronos_materializer SET valid_until = now() - interval '1 second'"); err != nil {
		t.Fatal(err)
	}
	got, err := db.Claim(ctx, "w1", 10, time.Minute)
	if err != nil || len(got) != 1 || got[0].Run.JobID != other.ID {
		t.Fatalf("claimed %d runs (%v), want only the other job's", len(got), err)
	}

	// The leader's pass (the database's clock) sees the gap and folds.
	// A minute of lookahead: its vouch must outlast the claim below on a
	// loaded machine.
	res, err := db.Materialize(ctx, time.Time{}, time.Minute, 10)
	if err != nil || len(res.CatchUps) != 1 || res.CatchUps[0].JobID != j.ID || res.CatchUps[0].Folded != 1 {
		t.Fatalf("the pass after the gap: catch-ups %+v (%v), want one of job %d folding one run", res.CatchUps, err, j.ID)
	}
	c := claimOne(t, db, "w1", time.Minute)
	if c.Run.JobID != j.ID || !c.Run.CatchUp || !c.Run.ScheduledAt.Equal(at.Add(time.Second)) {
		t.Fatalf("claimed %+v, want the catch-up of job %d at %v", c.Run, j.ID, at.Add(time.Second))
	}
}

// TestClaimDoesNotHoldBeforeAnyPass: a database no materializer pass has
// vouched for yet (valid_until null: just migrated, or cloned) holds
// nothing back and folds nothing.
func TestClaimDoesNotHoldBeforeAnyPass(t *testing.T) {
	db, ctx := parallelDB(t)
	finishedWithTwoDue(t, db)
	if got, err := db.Claim(ctx, "w1", 10, time.Minute); err != nil || len(got) != 2 {
		t.Fatalf("claimed %d runs (%v), want both", len(got), err)
	}
}
