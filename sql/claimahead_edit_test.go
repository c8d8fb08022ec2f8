package sql_test

import (
	"context"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// A pause deletes the runs claimed ahead that no worker has started, and
// only those: a run its claim handed out as due (Wait zero: the worker
// sends it at once, with no StartAhead to fence) stays, even when the
// pause's transaction began before the run's instant. Here the claim's
// statement is held up past the instant (another transaction holds the
// job's overlap lock row, which the claim's insert waits for) while the
// pause waits for the claim's lock on the run. Before, the pause read the
// run as ahead of its own start and deleted it: the worker delivered a
// run that no longer existed (issue 22 item 3).
func TestPauseKeepsARunClaimedAsDue(t *testing.T) {
	db, ctx, j := parallelJob(t, "0 0 0 1 1 *", func(j *chronos.Job) { j.Overlap = chronos.OverlapSkip })
	var (
		runID int64
		at    time.Time
	)
	err := db.Pool.QueryRow(ctx, `
		INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at, fire_at)
		VALUES ($1, date_trunc('second', now()) + interval '5 seconds', 'schedule',
		        date_trunc('second', now()) + interval '5 seconds', date_trunc('second', now()) + interval '5 seconds')
		RETURNING id, available_at`, j.ID).Scan(&runID, &at)
	if err != nil {
		t.Fatal(err)
	}

	blocker, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback(context.Background()) //nolint:errcheck // a no-op after the rollback below
	if _, err := blocker.Exec(ctx, `INSERT INTO job_run_locks (job_id, run_id) VALUES ($1, -1)`, j.ID); err != nil {
		t.Fatal(err)
	}
	waiting := func(n int) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			var got int
			if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
				 WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d transactions waiting for a lock, want %d", got, n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	type claimed struct {
		c   []sql.Claimed
		err error
	}
	claims := make(chan claimed, 1)
	go func() {
		c, err := db.ClaimAhead(ctx, "w1", 1, time.Minute, time.Minute)
		claims <- claimed{c, err}
	}()
	waiting(1) // the claim has the run and waits for the lock row
	paused := make(chan error, 1)
	go func() {
		_, err := db.UpdateJob(ctx, j.ID, &chronos.JobUpdate{Enabled: chronos.Some(false)})
		paused <- err
	}()
	waiting(2) // the pause waits for the claim's lock on the run
	for dbNow(t, db).Before(at.Add(50 * time.Millisecond)) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := blocker.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	cl := <-claims
	if cl.err != nil {
		t.Fatal(cl.err)
	}
	if err := <-paused; err != nil {
		t.Fatal(err)
	}
	if len(cl.c) != 1 || cl.c[0].Run.ID != runID {
		t.Fatalf("claimed %d runs, want run %d", len(cl.c), runID)
	}
	if cl.c[0].Wait > 0 {
		t.Skipf("the claim finished before the instant (wait %s): not the case under test", cl.c[0].Wait)
	}
	var n int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM job_runs WHERE id = $1`, runID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("the pause deleted run %d, which its claim handed out as due (sent at once, unfenced)", runID)
	}
	if err := db.Start(ctx, cl.c[0].Lease()); err != nil {
		t.Errorf("start the run claimed as due: %v", err)
	}
}

// One StartAhead marks every run a claim took ahead of one instant
// running, and leaves out each run whose lease is gone: here a paused
// job's run (the pause deleted it) and a stale lease (an attempt the run
// is no longer at). The workers of the runs left out must not send them.
func TestStartAheadStartsTheGroupAndLeavesLostLeasesOut(t *testing.T) {
	db, ctx, a := parallelJob(t, "0 0 0 1 1 *")
	b := mustCreate(t, db, cronJob("0 0 0 1 1 *"))
	at := dbNow(t, db).Add(5 * time.Second).Truncate(time.Second)
	insertScheduled(t, db, a.ID, at)
	insertScheduled(t, db, b.ID, at)
	cs, err := db.ClaimAhead(ctx, "w1", 10, time.Minute, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || cs[0].Wait <= 0 || cs[1].Wait <= 0 {
		t.Fatalf("claimed %d runs ahead (%+v), want 2 with a wait", len(cs), cs)
	}
	runOf := map[int64]sql.Claimed{}
	for _, c := range cs {
		runOf[c.Run.JobID] = c
	}
	if _, err := db.UpdateJob(ctx, b.ID, &chronos.JobUpdate{Enabled: chronos.Some(false)}); err != nil {
		t.Fatal(err)
	}
	stale := runOf[a.ID].Lease()
	stale.Attempt++
	started, err := db.StartAhead(ctx, []sql.Lease{runOf[a.ID].Lease(), runOf[b.ID].Lease(), stale})
	if err != nil {
		t.Fatal(err)
	}
	want := runOf[a.ID].Run.ID
	if len(started) != 1 || !started[want] {
		t.Fatalf("started %v, want only run %d (job a's)", started, want)
	}
	if r := mustRun(t, db, want); r.Status != chronos.StatusRunning || r.StartedAt == nil {
		t.Fatalf("job a's run: status %s, started_at %v; want running with a start", r.Status, r.StartedAt)
	}
	// A second start of the same lease still finds the run this worker's.
	again, err := db.StartAhead(ctx, []sql.Lease{runOf[a.ID].Lease()})
	if err != nil || !again[want] {
		t.Fatalf("second start: %v, %v; want run %d started", again, err, want)
	}
}
