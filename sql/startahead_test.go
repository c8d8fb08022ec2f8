package sql_test

import (
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

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
