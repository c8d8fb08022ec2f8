package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// batchSize is how many jobs one POST /v1/jobs/batch of the bench
// carries (the route's limit).
const batchSize = 1000

// batchClients is how many batch requests the bench keeps in flight: a
// few are enough to keep Postgres busy while the next batch is encoded.
const batchClients = 4

// createBatched creates n jobs through POST /v1/jobs/batch of the API at
// base, up to batchSize per request, clients requests in flight; job(i) is the
// JSON of job i. progress, when set, is called after each batch with the
// jobs created so far. It returns how long it took.
func (e *env) createBatched(ctx context.Context, base string, n, clients int, job func(dst []byte, i int) []byte, progress func(done int)) (time.Duration, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// Smaller batches for few jobs, so that every client has some.
	size := min(batchSize, max(100, n/(4*clients)))
	var (
		next, done atomic.Int64
		wg         sync.WaitGroup
	)
	start := time.Now()
	for range clients {
		wg.Go(func() {
			var body []byte
			for {
				lo := int(next.Add(int64(size))) - size
				if lo >= n || ctx.Err() != nil {
					return
				}
				hi := min(lo+size, n)
				body = append(body[:0], `{"jobs":[`...)
				for i := lo; i < hi; i++ {
					if i > lo {
						body = append(body, ',')
					}
					body = job(body, i)
				}
				body = append(body, "]}"...)
				if err := e.apiAt(ctx, base, "POST", "/v1/jobs/batch", json.RawMessage(bytes.Clone(body)), 201, nil); err != nil {
					cancel(fmt.Errorf("create jobs %d-%d: %w", lo, hi-1, err))
					return
				}
				d := done.Add(int64(hi - lo))
				if progress != nil {
					progress(int(d))
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	return took, context.Cause(ctx)
}

// bytesPerJob is the size on disk of the jobs table (with its indexes and
// TOAST), and of the whole database, per job.
func (e *env) bytesPerJob(ctx context.Context) (table, database float64, err error) {
	var jobs, tbl, db int64
	err = e.db.Pool.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM jobs), pg_total_relation_size('jobs'), pg_database_size(current_database())`).
		Scan(&jobs, &tbl, &db)
	if err != nil {
		return 0, 0, fmt.Errorf("sizes: %w", err)
	}
	if jobs == 0 {
		return 0, 0, nil
	}
	return float64(tbl) / float64(jobs), float64(db) / float64(jobs), nil
}
