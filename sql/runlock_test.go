package sql_test

import (
	"context"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// exclusiveJob creates a job with overlap policy p and no schedule of its
// own to speak of (its runs are inserted by the tests).
func exclusiveJob(t testing.TB, db *sql.DB, p chronos.OverlapPolicy) *chronos.Job {
	t.Helper()
	j := cronJob("0 0 1 1 *")
	j.Overlap = p
	return mustCreate(t, db, j)
}

func count(t testing.TB, db *sql.DB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := db.Pool.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func locks(t testing.TB, db *sql.DB, jobID int64) int {
	return count(t, db, "SELECT count(*) FROM job_run_locks WHERE job_id = $1", jobID)
}

// A run taken back by a plain UPDATE (not a statement of the claim's
// state machine: a hand edit, another version's reaper) gives up the
// overlap lock in that statement, so its skip/queue_one job runs again.
func TestPlainUpdateReleasesTheOverlapLock(t *testing.T) {
	db, ctx := parallelDB(t)
	for _, p := range []chronos.OverlapPolicy{chronos.OverlapSkip, chronos.OverlapQueueOne} {
		for _, to := range []string{"pending", "dead", "succeeded"} {
			j := exclusiveJob(t, db, p)
			insertPending(t, db, j.ID, 2)
			c, err := db.Claim(ctx, "w-"+to, 10, time.Minute)
			if err != nil || len(c) != 1 {
				t.Fatalf("%s: claimed %d runs (%v), want 1", p, len(c), err)
			}
			if locks(t, db, j.ID) != 1 {
				t.Fatalf("%s: the claim took no lock", p)
			}
			if _, err := db.Pool.Exec(ctx, `
				UPDATE job_runs SET status = $2, leased_by = NULL, leased_until = NULL,
				       finished_at = CASE WHEN $2 <> 'pending' THEN now() END
				 WHERE id = $1`, c[0].Run.ID, to); err != nil {
				t.Fatal(err)
			}
			if n := locks(t, db, j.ID); n != 0 {
				t.Fatalf("%s, run set %s by hand: %d lock rows left", p, to, n)
			}
			if c, err := db.Claim(ctx, "w2-"+to, 10, time.Minute); err != nil || len(c) != 1 {
				t.Fatalf("%s, run set %s by hand: the job's next run is blocked (claimed %d, %v)", p, to, len(c), err)
			}
		}
	}
	// And a deleted active run.
	j := exclusiveJob(t, db, chronos.OverlapQueueOne)
	insertPending(t, db, j.ID, 2)
	c := claimOne(t, db, "w-del", time.Minute)
	if _, err := db.Pool.Exec(ctx, "DELETE FROM job_runs WHERE id = $1", c.Run.ID); err != nil {
		t.Fatal(err)
	}
	if n := locks(t, db, j.ID); n != 0 {
		t.Fatalf("deleted run: %d lock rows left", n)
	}
	claimOne(t, db, "w-del2", time.Minute)
}

// The leader's sweep finds and repairs an orphaned lock row (one the
// triggers cannot see: the table edited by hand), an active run without a
// lock, and held runs that wait behind nothing.
func TestSweepRunLocksRepairs(t *testing.T) {
	db, ctx := parallelDB(t)

	// Healthy: nothing to repair.
	j := exclusiveJob(t, db, chronos.OverlapQueueOne)
	insertPending(t, db, j.ID, 3)
	c := claimOne(t, db, "w", time.Minute)
	if r, err := db.SweepRunLocks(ctx); err != nil || r.Total() != 0 {
		t.Fatalf("healthy database: repairs %+v, %v", r, err)
	}

	// An orphan: the lock names a run that is not active.
	if _, err := db.Pool.Exec(ctx, "UPDATE job_run_locks SET run_id = -1 WHERE job_id = $1", j.ID); err != nil {
		t.Fatal(err)
	}
	r, err := db.SweepRunLocks(ctx)
	if err != nil || r.Orphans != 1 || r.Missing != 1 {
		// The orphan goes, and the run still active takes the lock.
		t.Fatalf("orphan: repairs %+v, %v", r, err)
	}
	if n := count(t, db, "SELECT count(*) FROM job_run_locks WHERE job_id = $1 AND run_id = $2", j.ID, c.Run.ID); n != 1 {
		t.Fatal("the active run did not get the lock back")
	}

	// Held runs behind nothing: the head deleted while the triggers were
	// off (as a restore of a partial dump could leave it).
	k := exclusiveJob(t, db, chronos.OverlapQueueOne)
	insertPending(t, db, k.ID, 3)
	if n := count(t, db, "SELECT count(*) FROM job_runs WHERE job_id = $1 AND held", k.ID); n != 2 {
		t.Fatalf("%d of 3 waiting runs held, want 2", n)
	}
	sqltest.WithoutTriggers(t, db, sqltest.Statement{SQL: "DELETE FROM job_runs WHERE job_id = $1 AND NOT held", Args: []any{k.ID}})
	if c, err := db.Claim(ctx, "w-k", 10, time.Minute); err != nil || len(c) != 0 {
		t.Fatalf("claimed %d (%v) before the sweep", len(c), err)
	}
	if r, err := db.SweepRunLocks(ctx); err != nil || r.Stalled != 1 {
		t.Fatalf("stalled: repairs %+v, %v", r, err)
	}
	if c, err := db.Claim(ctx, "w-k", 10, time.Minute); err != nil || len(c) != 1 || c[0].Run.JobID != k.ID {
		t.Fatalf("after the sweep: claimed %d (%v), want the stalled job's next run", len(c), err)
	}
}

// Runs leased or running when migration 016 ran, of a skip/queue_one job,
// get their lock: a second run of the job is not claimed while they run.
func TestMigrationLocksRunsInFlight(t *testing.T) {
	ctx, dsn := parallelURL(t, sqltest.NewEmptyURL)
	if err := sql.MigrateTo(ctx, dsn, 13); err != nil {
		t.Fatal(err)
	}
	db := sqltest.Open(t, dsn, "upgrade")
	var jobID int64
	if err := db.Pool.QueryRow(ctx, `
		INSERT INTO jobs (name, cron_expr, target_url, overlap) VALUES ('upgraded', '0 0 1 1 *', 'http://127.0.0.1:9/', 'queue_one')
		RETURNING id`).Scan(&jobID); err != nil {
		t.Fatal(err)
	}
	// One run in flight (claimed by the old version, which took no lock:
	// migration 003 created the table empty) and two waiting.
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO job_runs (job_id, scheduled_at, trigger, status, attempt_count, available_at, leased_by, leased_until)
		VALUES ($1, now(), 'manual', 'running', 1, now() - interval '1 minute', 'old-worker', now() + interval '1 hour')`,
		jobID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at)
		SELECT $1, now(), 'manual', now() - interval '1 second' FROM generate_series(1, 2)`, jobID); err != nil {
		t.Fatal(err)
	}
	if err := sql.Migrate(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	if c, err := db.Claim(ctx, "new-worker", 10, time.Minute); err != nil || len(c) != 0 {
		t.Fatalf("after the upgrade a second run of the job was claimed (%d, %v) while one runs", len(c), err)
	}
	if n := count(t, db, "SELECT count(*) FROM job_runs WHERE job_id = $1 AND held", jobID); n != 2 {
		t.Fatalf("%d of the 2 waiting runs held", n)
	}
}

// A PATCH from overlap allow to skip or queue_one while a run is in flight
// takes the lock for that run in its transaction: no second run of the job
// starts while it runs.
func TestOverlapPatchLocksTheRunInFlight(t *testing.T) {
	db, ctx := parallelDB(t)
	for _, p := range []chronos.OverlapPolicy{chronos.OverlapSkip, chronos.OverlapQueueOne} {
		j := exclusiveJob(t, db, chronos.OverlapAllow)
		insertPending(t, db, j.ID, 1)
		first := claimOne(t, db, "w-"+string(p), time.Minute)
		insertPending(t, db, j.ID, 2)
		if _, err := db.UpdateJob(ctx, j.ID, &chronos.JobUpdate{Overlap: chronos.Some(p)}); err != nil {
			t.Fatal(err)
		}
		if c, err := db.Claim(ctx, "w2-"+string(p), 10, time.Minute); err != nil || len(c) != 0 {
			t.Fatalf("%s: a second run claimed (%d, %v) while the first runs", p, len(c), err)
		}
		// When the first ends, the next one (and only one) runs.
		if _, err := db.Complete(ctx, []sql.Outcome{{Lease: first.Lease(), Success: true, StatusCode: 204}}); err != nil {
			t.Fatal(err)
		}
		if c, err := db.Claim(ctx, "w3-"+string(p), 10, time.Minute); err != nil || len(c) != 1 {
			t.Fatalf("%s: after the first ended, claimed %d (%v), want 1", p, len(c), err)
		}
	}
	// And back to allow: every waiting run is claimable at once.
	j := exclusiveJob(t, db, chronos.OverlapQueueOne)
	insertPending(t, db, j.ID, 3)
	claimOne(t, db, "w-allow", time.Minute)
	if _, err := db.UpdateJob(ctx, j.ID, &chronos.JobUpdate{Overlap: chronos.Some(chronos.OverlapAllow)}); err != nil {
		t.Fatal(err)
	}
	if c, err := db.Claim(ctx, "w2-allow", 10, time.Minute); err != nil || len(c) != 2 {
		t.Fatalf("allow again: claimed %d (%v), want the 2 waiting runs", len(c), err)
	}
}

// Draining a queue behind an active run touches one waiting run per
// completion, not all of them; and held runs are not in the claim's way.
func TestQueueDrainTouchesOneRun(t *testing.T) {
	db, ctx := parallelDB(t)
	j := exclusiveJob(t, db, chronos.OverlapQueueOne)
	const waiting = 2000
	insertPending(t, db, j.ID, waiting+1)
	if n := count(t, db, "SELECT count(*) FROM job_runs WHERE job_id = $1 AND status = 'pending' AND NOT held", j.ID); n != 1 {
		t.Fatalf("%d runs of the queue claimable, want the head only", n)
	}
	for i := range 3 {
		c := claimOne(t, db, "w", time.Minute)
		var before []string
		rows, err := db.Pool.Query(ctx, "SELECT xmin::text FROM job_runs WHERE job_id = $1 AND status = 'pending' ORDER BY id", j.ID)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var x string
			if err := rows.Scan(&x); err != nil {
				t.Fatal(err)
			}
			before = append(before, x)
		}
		rows.Close()
		if _, err := db.Complete(ctx, []sql.Outcome{{Lease: c.Lease(), Success: true, StatusCode: 204}}); err != nil {
			t.Fatal(err)
		}
		touched := count(t, db, `
			SELECT count(*) FROM (SELECT xmin::text AS x, row_number() OVER (ORDER BY id) AS n
			                        FROM job_runs WHERE job_id = $1 AND status = 'pending') r
			 WHERE r.x <> ($2::text[])[r.n]`, j.ID, before)
		if touched != 1 {
			t.Fatalf("completion %d rewrote %d of %d waiting runs, want 1", i, touched, len(before))
		}
	}
}

// With many runs held behind an active run of one job, a claim for an
// unrelated job does not look at them: the claim's plan reads a handful
// of index entries, not thousands, in whichever partition they are
// (TestClaimableIndexOnEveryPartition checks every partition's index).
func TestHeldRunsCostTheClaimNothing(t *testing.T) {
	db, ctx := parallelDB(t)
	j := exclusiveJob(t, db, chronos.OverlapQueueOne)
	insertPending(t, db, j.ID, 1)
	claimOne(t, db, "w", time.Minute)
	insertPending(t, db, j.ID, 20000)
	other := mustCreate(t, db, cronJob("0 0 1 1 *"))
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at) VALUES ($1, now(), 'manual', now())`, other.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, "VACUUM ANALYZE job_runs"); err != nil {
		t.Fatal(err)
	}
	read, err := sql.ClaimIndexReads(ctx, db, 10)
	if err != nil {
		t.Fatal(err)
	}
	if read > 10 {
		t.Fatalf("the claim read %d runs (of the claimable index and any partition) with 20,000 runs held, want the one claimable", read)
	}
	c, err := db.Claim(ctx, "w2", 10, time.Minute)
	if err != nil || len(c) != 1 || c[0].Run.JobID != other.ID {
		t.Fatalf("claimed %d (%v), want the other job's run", len(c), err)
	}
}
