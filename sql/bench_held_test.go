package sql_test

import (
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// BenchmarkClaimBesideHeldRuns measures claim+complete of one run of an
// unrelated job while 20,000 runs of a queue_one job wait behind its
// active run (issue 22: 80 ms per claim when the claim walked them), and
// the claim alone (ms/claim). The pool's connections commit without
// waiting for the WAL flush, as the reactor's do, so that the figure is
// the claim's own work, not the disk's.
//
//	go test -run '^$' -bench ClaimBesideHeldRuns ./sql/
func BenchmarkClaimBesideHeldRuns(b *testing.B) {
	db := sqltest.New(b)
	ctx := b.Context()
	q := cronJob("0 0 1 1 *")
	q.Overlap = chronos.OverlapQueueOne
	mustCreate(b, db, q)
	insertPending(b, db, q.ID, 1)
	claimOne(b, db, "holder", time.Hour)
	insertPending(b, db, q.ID, 20000)
	other := mustCreate(b, db, cronJob("0 0 1 1 *"))
	insertPending(b, db, other.ID, b.N)
	if _, err := db.Pool.Exec(ctx, "VACUUM ANALYZE job_runs"); err != nil {
		b.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `DO $$ BEGIN
		EXECUTE format('ALTER DATABASE %I SET synchronous_commit = off', current_database()); END $$`); err != nil {
		b.Fatal(err)
	}
	db.Pool.Reset() // new connections take the setting
	var claiming time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		c := claimOne(b, db, "bench", time.Minute)
		claiming += time.Since(t0)
		if c.Run.JobID != other.ID {
			b.Fatalf("claimed a run of job %d", c.Run.JobID)
		}
		if _, err := db.Complete(ctx, []sql.Outcome{{Lease: c.Lease(), Success: true, StatusCode: 204}}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/run")
	b.ReportMetric(float64(claiming.Microseconds())/float64(b.N)/1000, "ms/claim")
}

// BenchmarkQueueDrain measures draining a queue_one job's queue of 2,000
// runs, one claim and one completion at a time (issue 22: each completion
// rewrote every waiting run, O(N^2) in all).
//
//	go test -run '^$' -bench QueueDrain ./sql/
func BenchmarkQueueDrain(b *testing.B) {
	const waiting = 2000
	for range b.N {
		b.StopTimer()
		db := sqltest.New(b)
		q := cronJob("0 0 1 1 *")
		q.Overlap = chronos.OverlapQueueOne
		mustCreate(b, db, q)
		insertPending(b, db, q.ID, waiting)
		b.StartTimer()
		for range waiting {
			c := claimOne(b, db, "bench", time.Minute)
			if _, err := db.Complete(b.Context(), []sql.Outcome{{Lease: c.Lease(), Success: true, StatusCode: 204}}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*waiting)/1000, "ms/run")
}
