package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/chronoshq/chronos/internal/instant"
	"github.com/chronoshq/chronos/reactor"
)

// burstAttempts is how often burst starts over when creating the jobs
// took past the instant they were due at.
const burstAttempts = 3

// burstMargin is how long before the due instant T the creation must end:
// the jobs must all exist, and wait, when T comes.
const burstMargin = 500 * time.Millisecond

// benchBurst: N one-shot jobs created through the API (POST /v1/jobs,
// concurrent clients), all due at one instant T chosen so the creation
// ends before it. From T: the first and the last delivery, runs/s (N over
// T → last delivery), every run recorded succeeded; and the CPU per run
// of chronos and of Postgres from a lookahead before T (the
// materializer's work included) to the last completion.
//
// T is the creation's estimated time (from a warm-up of the same clients)
// plus half again, the materializer's lookahead and a second. When the
// creation still overran T, the attempt is dropped and the scenario
// starts over in a fresh world, with the time it really took.
func benchBurst(ctx context.Context, b *runner) (*result, error) {
	return retryDue(ctx, b, "burst", "creating the jobs", burstAttempts, burstOnce)
}

// burstOnce is one attempt of burst. need is how long the creation is
// known to take (0: estimate it). A nil result with a nil error means the
// creation overran T; took says how long it took.
func burstOnce(ctx context.Context, e *env, f Config, need time.Duration) (res *result, took time.Duration, err error) {
	n := f.BurstJobs
	res = &result{Scenario: "burst"}
	res.param("jobs", n)
	res.param("clients", f.Clients)
	res.clusterParams(&f)

	// The warm-up jobs are due in years: they open the connections and
	// tell how fast this machine creates jobs.
	far := farFuture()
	warm := min(max(n/10, 50), 1000)
	_, _, warmTook, err := e.createJobs(ctx, warm, f.Clients, 0, func(i int) map[string]any {
		return map[string]any{"name": fmt.Sprintf("bench-burst-warm-%d", i), "run_at": far,
			"target_url": e.target.base + "/warm", "max_retries": 0}
	})
	if err != nil {
		return nil, 0, fmt.Errorf("warm-up: %w", err)
	}
	estimate := max(need, warmTook*time.Duration(n)/time.Duration(warm)*3/2)
	due := time.Now().Add(estimate + reactor.DefaultLookahead + time.Second).Truncate(time.Second).Add(time.Second)
	dueAt := due.UTC().Format(time.RFC3339Nano)
	e.b.progress("burst: creating %d jobs due at %s (in %s)", n, due.Format("15:04:05"), time.Until(due).Round(time.Millisecond))

	_, _, took, err = e.createJobs(ctx, n, f.Clients, 0, func(i int) map[string]any {
		return map[string]any{"name": fmt.Sprintf("bench-burst-due-%d", i), "run_at": dueAt,
			"target_url": e.target.base + "/b", "max_retries": 0}
	})
	if err != nil {
		return nil, 0, err
	}
	created := time.Now()
	if created.After(due.Add(-burstMargin)) {
		return nil, took, nil
	}
	res.metric("create_jobs_per_s", float64(n)/took.Seconds(), "jobs/s")
	res.ms("created_before_due", due.Sub(created))

	// CPU from just before the materializer may see the jobs (a lookahead
	// ahead of T) to the last completion: materializing, claiming,
	// delivering and completing the runs, and little idle time.
	cpu := newCPUMeter(ctx, e)
	if err := sleepCtx(ctx, time.Until(due.Add(-reactor.DefaultLookahead-100*time.Millisecond))); err != nil {
		return nil, 0, err
	}
	cpu0, err := cpu.sample()
	if err != nil {
		return nil, 0, err
	}
	if err := sleepCtx(ctx, time.Until(due)); err != nil {
		return nil, 0, err
	}
	if err := e.target.waitCount(ctx, n, 2*time.Minute+time.Duration(n)*time.Millisecond); err != nil {
		return nil, 0, err
	}
	arr := e.target.snapshot()
	var first, last time.Time
	seen := make(map[int64]bool, len(arr))
	for _, a := range arr {
		if first.IsZero() || a.at.Before(first) {
			first = a.at
		}
		last = instant.Later(last, a.at)
		seen[a.runID] = true
	}
	succeeded, recorded, err := e.waitSucceeded(ctx, "bench-burst-due-%", n)
	if err != nil {
		return nil, 0, err
	}
	cpu1, err := cpu.sample()
	if err != nil {
		return nil, 0, err
	}
	burn := last.Sub(due)
	res.target("runs_per_s", float64(n)/burn.Seconds(), "runs/s", "≥ 1.5× River's")
	res.ms("first_delivery", first.Sub(due))
	res.ms("last_delivery", burn)
	res.ms("all_recorded", recorded.Sub(due))
	res.metric("delivered", float64(len(seen)), "runs")
	res.metric("duplicate_deliveries", float64(len(arr)-len(seen)), "requests")
	cpu.report(res, cpu0, cpu1, n, "run")
	res.note("T = %s, %s after the last job was created", due.Format("15:04:05.000"), due.Sub(created).Round(time.Millisecond))
	if first.Before(due) {
		res.fail("burst: a run was delivered %s before it was due", due.Sub(first))
	}
	if len(seen) != n {
		res.fail("burst: %d of %d runs delivered", len(seen), n)
	}
	if succeeded != n {
		res.fail("burst: %d of %d runs recorded succeeded within a minute of the last delivery", succeeded, n)
	}
	if f.Peer == PeerRiver {
		// The same number of jobs, the same target, the same server, now.
		if err := e.runRiverPeer(ctx, res, n, float64(n)/burn.Seconds()); err != nil {
			return nil, 0, err
		}
	}
	return res, 0, nil
}

// waitSucceeded waits (a minute at most) until the runs of the jobs whose
// name is LIKE pattern that are recorded succeeded number n, and returns
// how many are and when it stopped waiting.
func (e *env) waitSucceeded(ctx context.Context, pattern string, n int) (int, time.Time, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		var succeeded int
		err := e.db.Pool.QueryRow(ctx, `
			SELECT count(*) FROM job_runs r JOIN jobs j ON j.id = r.job_id
			 WHERE j.name LIKE $1 AND r.status = 'succeeded'`, pattern).Scan(&succeeded)
		if err != nil {
			return 0, time.Time{}, fmt.Errorf("count succeeded runs: %w", err)
		}
		if succeeded >= n || time.Now().After(deadline) {
			return succeeded, time.Now(), nil
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return 0, time.Time{}, err
		}
	}
}
