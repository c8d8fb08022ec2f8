package sql_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// BenchmarkClaimComplete measures the worker hot path at the data layer:
// claim a batch, record a success for each, over b.N pending runs; with
// one claimer and with four concurrent ones. The metric is runs/s.
//
//	go test -run '^$' -bench ClaimComplete ./sql/
func BenchmarkClaimComplete(b *testing.B) {
	for _, workers := range []int{1, 4} {
		for _, batch := range []int{1, 10, 100} {
			b.Run(fmt.Sprintf("batch=%d/workers=%d", batch, workers), func(b *testing.B) {
				benchClaimComplete(b, batch, workers)
			})
		}
	}
}

func benchClaimComplete(b *testing.B, batch, workers int) {
	db := sqltest.New(b)
	ctx := b.Context()
	j := mustCreate(b, db, cronJob("0 0 1 1 *"))
	insertPending(b, db, j.ID, b.N)
	if _, err := db.Pool.Exec(ctx, "VACUUM ANALYZE job_runs"); err != nil {
		b.Fatal(err)
	}
	var done atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range workers {
		worker := fmt.Sprintf("bench-%d", w)
		wg.Go(func() {
			outs := make([]sql.Outcome, 0, batch)
			for done.Load() < int64(b.N) {
				cs, err := db.Claim(ctx, worker, batch, time.Minute)
				if err != nil {
					b.Error(err)
					return
				}
				if len(cs) == 0 {
					return // the others hold the rest
				}
				outs = outs[:0]
				now := time.Now()
				for _, c := range cs {
					outs = append(outs, sql.Outcome{Lease: c.Lease(), Success: true, StatusCode: 200,
						StartedAt: now, FinishedAt: now})
				}
				res, err := db.Complete(ctx, outs)
				if err != nil {
					b.Error(err)
					return
				}
				for _, r := range res {
					if r.Err != nil {
						b.Error(r.Err)
						return
					}
				}
				done.Add(int64(len(cs)))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if n := done.Load(); n != int64(b.N) {
		b.Fatalf("completed %d of %d runs", n, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
}

// BenchmarkCreateJobs measures the batch route at the data layer, without
// HTTP: b.N jobs shaped like `chronos bench create`'s batch jobs (a
// one-shot with a payload), created 1,000 a call (POST /v1/jobs/batch's
// most) by one writer. The metric is jobs/s; what a job costs Postgres
// and Go apart is `chronos bench create`'s to report.
//
//	go test -run '^$' -bench CreateJobs -benchtime 30000x ./sql/
func BenchmarkCreateJobs(b *testing.B) {
	db := sqltest.New(b)
	ctx := b.Context()
	runAt := time.Now().Add(24 * time.Hour)
	payload := []byte(`{"n":1}`)
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(1000, b.N-done)
		jobs := make([]*chronos.Job, n)
		for i := range jobs {
			jobs[i] = &chronos.Job{Name: fmt.Sprintf("bench-%d", done+i), RunAt: &runAt,
				TargetURL: "http://127.0.0.1:9/c", Payload: payload}
		}
		if err := db.CreateJobs(ctx, jobs); err != nil {
			b.Fatal(err)
		}
		done += n
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}
