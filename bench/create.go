package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// createJobs creates n jobs through the API with clients concurrent
// keep-alive clients, spread over the instances; job(i) is the body of
// job i. It stops early, without error, once limit has passed (0: no
// limit). It returns each request's latency, how many jobs were created,
// and how long it all took. The first failed request stops every client
// and is the error.
func (e *env) createJobs(ctx context.Context, n, clients int, limit time.Duration, job func(i int) map[string]any) (lat []time.Duration, created int, took time.Duration, err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		next    atomic.Int64
		mu      sync.Mutex
		wg      sync.WaitGroup
		stopped = make(chan struct{})
	)
	start := time.Now()
	if limit > 0 {
		t := time.AfterFunc(limit, func() { close(stopped) })
		defer t.Stop()
	}
	for c := range clients {
		wg.Go(func() {
			var mine []time.Duration
			defer func() {
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			}()
			base := e.insts[c%len(e.insts)].url()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				select {
				case <-stopped:
					return
				default:
				}
				t0 := time.Now()
				if err := e.apiAt(ctx, base, "POST", "/v1/jobs", job(i), 201, nil); err != nil {
					cancel(fmt.Errorf("create job %d: %w", i, err))
					return
				}
				mine = append(mine, time.Since(t0))
			}
		})
	}
	wg.Wait()
	took = time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return nil, 0, took, err
	}
	return lat, len(lat), took, nil
}

// warmUpJobs is how many jobs create makes, untimed, before the measured
// ones: connections opened, statements prepared, caches warm.
const warmUpJobs = 100

// runCreate is the create scenario: concurrent API clients creating jobs
// (one-shot jobs whose run_at is years away, so nothing runs): jobs/s, the
// latency of each POST /v1/jobs, and the CPU per job of chronos and of
// Postgres; then five times as many through POST /v1/jobs/batch (1,000 a
// request, a few requests in flight).
func runCreate(ctx context.Context, e *env, f Config) (*result, error) {
	res := &result{Scenario: "create"}
	res.param("jobs", f.CreateJobs)
	res.param("clients", f.Clients)
	res.param("instances", f.Instances)
	res.param("procs", f.Procs)
	if f.CreateDuration > 0 {
		res.param("limit", f.CreateDuration.String())
	}

	runAt := farFuture()
	body := func(prefix string) func(i int) map[string]any {
		return func(i int) map[string]any {
			return map[string]any{
				"name": fmt.Sprintf("bench-create-%s%d", prefix, i), "run_at": runAt,
				"target_url": e.target.base + "/c", "payload": map[string]any{"n": i}, "max_retries": 0,
			}
		}
	}
	if _, _, _, err := e.createJobs(ctx, warmUpJobs, f.Clients, 0, body("warm-")); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	cpu := newCPUMeter(ctx, e)
	cpu0, err := cpu.sample()
	if err != nil {
		return nil, err
	}
	lat, created, took, err := e.createJobs(ctx, f.CreateJobs, f.Clients, f.CreateDuration, body(""))
	if err != nil {
		return nil, err
	}
	cpu1, err := cpu.sample()
	if err != nil {
		return nil, err
	}
	p := percentiles(lat)
	res.target("jobs_per_s", float64(created)/took.Seconds(), "jobs/s", "≥ 5000")
	res.metric("created", float64(created), "jobs")
	res.ms("took", took)
	res.spread("post_", p)
	cpu.report(res, cpu0, cpu1, created, "job")

	// The batch route: 1,000 jobs a request, a few requests at once.
	nb := f.CreateJobs * 5
	cpu0, err = cpu.sample()
	if err != nil {
		return nil, err
	}
	btook, err := e.createBatched(ctx, e.insts[0].url(), nb, batchClients, func(dst []byte, i int) []byte {
		return fmt.Appendf(dst, `{"name":"bench-create-batch-%d","run_at":%q,"target_url":%q,"payload":{"n":%d},"max_retries":0}`,
			i, runAt, e.target.base+"/c", i)
	}, nil)
	if err != nil {
		return nil, err
	}
	cpu1, err = cpu.sample()
	if err != nil {
		return nil, err
	}
	res.target("batch.jobs_per_s", float64(nb)/btook.Seconds(), "jobs/s", "≥ 30000")
	res.metric("batch.created", float64(nb), "jobs")
	res.ms("batch.took", btook)
	cpu.reportAs(res, "batch.", cpu0, cpu1, nb, "job")
	return res, nil
}
