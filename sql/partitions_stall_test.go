package sql_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chronoshq/chronos/sql"
)

// TestPartitionUpkeepLockNotHeldAcrossAStall: partition upkeep locks
// job_runs against writes (createPartition: SHARE ROW EXCLUSIVE on the
// parent, ACCESS EXCLUSIVE on the default partition) in a transaction of
// several round trips. A leader stalled in the middle of it (a starved
// process on a loaded machine; the model test freezes one with SIGSTOP)
// held those locks for the whole stall: every claim, start, completion
// and materialized run of every instance waited (7 s in the model, and
// the leader's own materializer with them, so every job fell behind).
// The server now ends a transaction of the upkeep whose client has gone
// quiet for a second, and with it the locks.
func TestPartitionUpkeepLockNotHeldAcrossAStall(t *testing.T) {
	db, ctx, j := parallelJob(t, "0 0 1 1 *")

	locked := make(chan struct{})
	upkeep := make(chan error, 1)
	go func() {
		upkeep <- sql.PartitionTxForTest(ctx, db, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "LOCK TABLE ONLY job_runs IN SHARE ROW EXCLUSIVE MODE"); err != nil {
				return err
			}
			close(locked)
			// The client stalls with the lock held.
			select {
			case <-time.After(8 * time.Second):
			case <-ctx.Done():
			}
			_, err := tx.Exec(context.WithoutCancel(ctx), "SELECT 1")
			return err
		})
	}()
	select {
	case <-locked:
	case err := <-upkeep:
		t.Fatalf("the upkeep ended before it held the lock: %v", err)
	}

	start := time.Now()
	if _, err := db.Pool.Exec(ctx, `INSERT INTO job_runs (job_id, scheduled_at, trigger) VALUES ($1, now(), 'manual')`, j.ID); err != nil {
		t.Fatalf("insert a run: %v", err)
	}
	waited := time.Since(start)
	t.Logf("an insert waited %s behind the stalled upkeep", waited.Round(time.Millisecond))
	if waited > 5*time.Second {
		t.Errorf("an insert of a run waited %s behind partition upkeep whose client stalled for 8 s: the lock is held across the stall", waited.Round(time.Millisecond))
	}
	if err := <-upkeep; err == nil {
		t.Error("the stalled upkeep committed; want it ended by the server")
	}
}
