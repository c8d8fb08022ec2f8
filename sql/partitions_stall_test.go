package sql_test

import (
	"context"
	"errors"
	"fmt"
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

// TestPartitionUpkeepNeverWaitsWhileHoldingJobRuns: a statement that has
// read job_runs (holding its default partition) and then writes it needs
// the parent, which partition upkeep holds while it asks for the default
// partition: a cycle. Postgres broke it only when the upkeep's lock
// timeout ran out, every claim of the cluster queued behind the upkeep
// meanwhile (a minute's lag p99 of 45-109 ms at 5,000 runs/s), or, with
// a deadlock_timeout below that, by failing the writer's statement. The
// upkeep now asks for the partition NOWAIT: the writer goes on, and the
// upkeep tries again later.
func TestPartitionUpkeepNeverWaitsWhileHoldingJobRuns(t *testing.T) {
	db, ctx, j := parallelJob(t, "0 0 1 1 *")

	reader, err := db.Pool.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reader.Rollback(context.WithoutCancel(ctx)) }()
	// Short, so that a cycle is reported as one instead of outwaited.
	if _, err := reader.Exec(ctx, "SET LOCAL deadlock_timeout = '10ms'"); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Exec(ctx, "SELECT count(*) FROM job_runs"); err != nil {
		t.Fatal(err)
	}

	upkeep := make(chan error, 1)
	go func() {
		_, err := db.EnsureRunPartitions(ctx, time.Minute, 5*time.Minute)
		upkeep <- err
	}()
	// Until the upkeep waits for the default partition (as it did) or
	// gives up (as it now does once the reader outlasts its tries).
	var upkeepErr error
	waiting := false
	for deadline := time.Now().Add(time.Minute); !waiting; {
		select {
		case upkeepErr = <-upkeep:
			upkeep <- upkeepErr
			waiting = true // not waiting: done; leave the loop
			continue
		default:
		}
		if err := db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks
			WHERE relation = 'job_runs_default'::regclass AND mode = 'AccessExclusiveLock' AND NOT granted)`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the upkeep neither waited for the default partition nor returned within a minute")
		}
		time.Sleep(time.Millisecond)
	}

	if _, err := reader.Exec(ctx, `INSERT INTO job_runs (job_id, scheduled_at, trigger) VALUES ($1, now(), 'manual')`, j.ID); err != nil {
		t.Fatalf("a transaction that read job_runs could not write it while partition upkeep ran: %v", err)
	}
	if err := reader.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-upkeep; err != nil && !errors.Is(err, sql.ErrPartitionBusy) {
		t.Errorf("partition upkeep: %v; want done, or busy until the next tick", err)
	}
	if _, err := db.EnsureRunPartitions(ctx, time.Minute, 5*time.Minute); err != nil {
		t.Errorf("partition upkeep once the reader is gone: %v", err)
	}
}

// TestPartitionUpkeepRefusedWithoutAnError: the upkeep is refused its
// locks a few times a minute on a busy cluster (see the test above). A
// plain LOCK ... NOWAIT refused, or a LOCK past its lock_timeout, is an
// ERROR, which Postgres writes to its log and which ends the transaction:
// a line a minute that reads like a fault. A refusal now leaves the
// transaction going (so the server raised no error) and holding neither
// lock, the parent's included, and both locks are taken once they are
// free.
func TestPartitionUpkeepRefusedWithoutAnError(t *testing.T) {
	db, ctx, j := parallelJob(t, "0 0 1 1 *")
	// holds says which of job_runs' locks this transaction holds (an
	// error: the transaction is aborted).
	holds := func(tx pgx.Tx) (parent, part bool, err error) {
		err = tx.QueryRow(ctx, `SELECT
			EXISTS (SELECT 1 FROM pg_locks WHERE pid = pg_backend_pid() AND relation = 'job_runs'::regclass
			        AND mode = 'ShareRowExclusiveLock' AND granted),
			EXISTS (SELECT 1 FROM pg_locks WHERE pid = pg_backend_pid() AND relation = 'job_runs_default'::regclass
			        AND mode = 'AccessExclusiveLock' AND granted)`).Scan(&parent, &part)
		return parent, part, err
	}
	for _, busy := range []struct {
		what string
		stmt string
	}{
		{"a transaction reads the partition", "SELECT count(*) FROM job_runs_default"},
		{"a transaction writes the parent", fmt.Sprintf(
			"INSERT INTO job_runs (job_id, scheduled_at, trigger) VALUES (%d, now(), 'manual')", j.ID)},
	} {
		holder, err := db.Pool.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = holder.Rollback(context.WithoutCancel(ctx)) }()
		if _, err := holder.Exec(ctx, busy.stmt); err != nil {
			t.Fatal(err)
		}
		err = sql.PartitionTxForTest(ctx, db, func(tx pgx.Tx) error {
			err := sql.LockPartitionForTest(ctx, tx, "job_runs", "SHARE ROW EXCLUSIVE", "job_runs_default")
			if !errors.Is(err, sql.ErrLockRefusedForTest) {
				t.Errorf("%s: lock for upkeep: %v, want refused", busy.what, err)
			}
			// After an error, any statement fails with "current
			// transaction is aborted".
			parent, part, err := holds(tx)
			if err != nil {
				return err
			}
			if parent || part {
				t.Errorf("%s: refused, the upkeep still holds job_runs (%v) or its partition (%v)", busy.what, parent, part)
			}
			return nil
		})
		if err != nil {
			t.Errorf("%s: the transaction after the refused lock: %v; want it going", busy.what, err)
		}
		if err := holder.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
	}

	err := sql.PartitionTxForTest(ctx, db, func(tx pgx.Tx) error {
		if err := sql.LockPartitionForTest(ctx, tx, "job_runs", "SHARE ROW EXCLUSIVE", "job_runs_default"); err != nil {
			return err
		}
		parent, part, err := holds(tx)
		if err != nil {
			return err
		}
		if !parent || !part {
			t.Errorf("free: the upkeep holds job_runs %v and its partition %v; want both", parent, part)
		}
		return nil
	})
	if err != nil {
		t.Errorf("lock a free partition: %v", err)
	}
}
