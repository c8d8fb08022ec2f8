package reactor

import (
	"net/http"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/reactor/reactortest"
)

// An orphaned lock row (its run long gone, as a hand edit of the table
// could leave it) no longer blocks its queue_one job for good: the
// leader's lock check deletes it, the waiting run is delivered, and the
// repair is announced (chronos_run_lock_repairs_total counts it).
func TestLeaderRepairsAnOrphanedLock(t *testing.T) {
	dsn := parallelDSN(t)
	tg := newTarget(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	db := reactortest.OpenDB(t, dsn, "setup")
	expr := "0 0 1 1 *"
	j := reactortest.CreateJob(t, db, &chronos.Job{Name: "orphaned", CronExpr: &expr, TargetURL: tg.URL,
		Enabled: true, Overlap: chronos.OverlapQueueOne})
	if _, err := db.Pool.Exec(t.Context(), "INSERT INTO job_run_locks (job_id, run_id) VALUES ($1, -1)", j.ID); err != nil {
		t.Fatal(err)
	}
	in := startReactor(t, dsn, Config{ReaperInterval: 50 * time.Millisecond})
	sub := in.bus.Subscribe(16, func(e chronos.Event) bool { return e.Type == chronos.EventLocksRepaired })
	defer sub.Close()
	run := in.trigger(t, j.ID)
	reactortest.WaitStatus(t, in.db, run.ID, chronos.StatusSucceeded, 30*time.Second)
	select {
	case e := <-sub.C():
		if e.Op != chronos.LockOrphan || e.Count != 1 {
			t.Fatalf("repair event %+v, want one orphan", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no repair announced")
	}
}
