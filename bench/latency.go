package bench

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// runLatency is the latency scenario: POST /v1/jobs/{id}/trigger to the
// target receiving the request, one at a time on a quiet instance, then at
// a fixed rate while background runs stream in.
func runLatency(ctx context.Context, e *env, f Config) (*result, error) {
	job, err := e.createJob(ctx, map[string]any{
		"name": "bench-latency", "run_at": farFuture(), "target_url": e.target.base + "/lat", "max_retries": 0,
	})
	if err != nil {
		return nil, err
	}
	bg := benchJob("bench-latency-background", e.target.base+"/bg")
	if err := e.db.CreateJob(ctx, bg); err != nil {
		return nil, err
	}
	e.target.mu.Lock()
	e.target.watch = true
	e.target.mu.Unlock()

	res := &result{Scenario: "latency"}
	res.param("triggers", f.Triggers)
	res.param("rate", f.Rate)
	res.param("load_rate", f.LoadRate)
	res.param("instances", f.Instances)
	res.param("concurrency", f.Concurrency)
	res.param("async_commit", f.AsyncCommit)

	one := func() (deliver, answer time.Duration, err error) {
		// The deadline only ends a run that never arrives: on a saturated
		// machine (CI at load 31) the background's backlog held triggers
		// past 30 s, which is slow, not lost.
		actx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		t0 := time.Now()
		id, err := e.trigger(actx, job.ID)
		if err != nil {
			return 0, 0, err
		}
		answered := time.Now()
		at, err := e.target.await(actx, id)
		if err != nil {
			return 0, 0, err
		}
		return at.Sub(t0), answered.Sub(t0), nil
	}
	for range 20 { // warm-up: connections, prepared statements
		if _, _, err := one(); err != nil {
			return nil, err
		}
	}
	var deliver, answer []time.Duration
	for range f.Triggers {
		d, a, err := one()
		if err != nil {
			return nil, err
		}
		deliver, answer = append(deliver, d), append(answer, a)
	}
	p, pa := percentiles(deliver), percentiles(answer)
	res.spread("", p)
	res.ms("api_p50", pa.p50)
	res.ms("api_p99", pa.p99)

	// Under load: background runs inserted in small batches every 10 ms,
	// due at once, while triggers go out at a fixed rate.
	phase := time.Duration(f.Triggers) * time.Second / time.Duration(f.Rate)
	loadCtx, stopLoad := context.WithCancel(ctx)
	load := &offeredLoad{e: e, jobs: []int64{bg.ID}, rate: f.LoadRate}
	var loadWG sync.WaitGroup
	loadWG.Go(func() { load.run(loadCtx, time.Now(), time.Time{}) })
	time.Sleep(200 * time.Millisecond) // let the background reach its pace
	loadStart := time.Now()
	bgBefore := e.target.countPath("/bg")
	var (
		mu       sync.Mutex
		loaded   []time.Duration
		trigErrs []string
		trigWG   sync.WaitGroup
	)
	tick := time.NewTicker(time.Second / time.Duration(f.Rate))
	for range f.Triggers {
		<-tick.C
		trigWG.Go(func() {
			d, _, err := one()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				trigErrs = append(trigErrs, err.Error())
				return
			}
			loaded = append(loaded, d)
		})
	}
	tick.Stop()
	loadEnd := time.Now()
	bgDuring := e.target.countPath("/bg") - bgBefore
	trigWG.Wait()
	stopLoad()
	loadWG.Wait()
	if load.err != nil {
		return nil, fmt.Errorf("background load: %w", load.err)
	}
	if len(trigErrs) > 0 {
		return nil, fmt.Errorf("%d triggers under load failed, first: %s", len(trigErrs), trigErrs[0])
	}
	pl := percentiles(loaded)
	res.spread("load_", pl)
	res.metric("load_background_per_s", float64(bgDuring)/loadEnd.Sub(loadStart).Seconds(), "runs/s")
	res.note("under load: %d triggers at %d/s over %s while %d background runs/s were inserted (%d in all)",
		f.Triggers, f.Rate, phase.Round(time.Millisecond), f.LoadRate, load.inserted)
	return res, nil
}
