package bench

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// runThroughput is the throughput scenario: N runs due at the same
// instant; how long until the target has seen every one, and until every
// one is recorded succeeded.
func runThroughput(ctx context.Context, e *env, f Config) (*result, error) {
	job := benchJob("bench-throughput", e.target.base+"/t")
	if err := e.db.CreateJob(ctx, job); err != nil {
		return nil, err
	}
	n := f.Runs
	res := &result{Scenario: "throughput"}
	res.param("runs", n)
	res.clusterParams(&f)

	// The runs are inserted a little ahead of their available_at, so the
	// insert itself is not timed and every run becomes due at once.
	sampler, err := newStatSampler(ctx, e)
	if err != nil {
		return nil, err
	}
	defer sampler.close()
	cpu := newCPUMeter(ctx, e) // before the first sample: its query is not the instances'
	xacts0, err := sampler.sample(ctx)
	if err != nil {
		return nil, err
	}
	due := time.Now().Add(time.Second + time.Duration(n)*30*time.Microsecond)
	insertStart := time.Now()
	if err := e.insertRuns(ctx, job.ID, n, due); err != nil {
		return nil, err
	}
	inserted := time.Now()
	// CPU from here: the burn-down and the completions, not the insert.
	cpu0, err := cpu.sample()
	if err != nil {
		return nil, err
	}
	t0 := due
	if inserted.After(due) {
		t0 = inserted
		res.note("the insert ended %s after the runs were due: timed from the commit", inserted.Sub(due).Round(time.Millisecond))
	}
	if err := e.target.waitCount(ctx, n, 2*time.Minute+time.Duration(n)*time.Millisecond); err != nil {
		return nil, err
	}
	arr := e.target.snapshot()
	first, last := arr[0].at, arr[0].at
	seen := make(map[int64]bool, len(arr))
	for _, a := range arr {
		if a.at.Before(first) {
			first = a.at
		}
		if a.at.After(last) {
			last = a.at
		}
		seen[a.runID] = true
	}
	// Every delivery is also recorded: wait for the last completion batch.
	deadline := time.Now().Add(time.Minute)
	var succeeded int
	for {
		if err := e.db.Pool.QueryRow(ctx, "SELECT count(*) FROM job_runs WHERE status = 'succeeded'").Scan(&succeeded); err != nil {
			return nil, fmt.Errorf("count succeeded runs: %w", err)
		}
		if succeeded >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	recorded := time.Now()
	cpu1, err := cpu.sample()
	if err != nil {
		return nil, err
	}
	if e.proxy != nil {
		counts := e.proxy.take()
		res.note("statements per 1000 runs: %s", strings.Join(breakdownPer(counts, e.insts[0].name(), n), ", "))
	}
	time.Sleep(time.Second) // Postgres publishes backend statistics at most once a second
	xacts1, err := sampler.sample(ctx)
	if err != nil {
		return nil, err
	}
	burn := last.Sub(t0)
	res.metric("runs_per_s", float64(n)/burn.Seconds(), "runs/s")
	res.ms("burn_down", burn)
	res.ms("first_delivery", first.Sub(t0))
	res.metric("recorded_per_s", float64(n)/recorded.Sub(t0).Seconds(), "runs/s")
	res.ms("all_recorded", recorded.Sub(t0))
	res.metric("insert_runs_per_s", float64(n)/inserted.Sub(insertStart).Seconds(), "runs/s")
	// The insert and the bench's own counting are 2 of these.
	res.metric("db_"+sampler.unit+"_per_run", (xacts1-xacts0-sampler.own*2)/float64(n), sampler.unit)
	res.metric("delivered", float64(len(seen)), "runs")
	res.metric("duplicate_deliveries", float64(len(arr)-len(seen)), "requests")
	cpu.report(res, cpu0, cpu1, n, "run")
	if len(seen) != n {
		res.fail("throughput: %d of %d runs delivered", len(seen), n)
	}
	if succeeded != n {
		res.fail("throughput: %d of %d runs recorded succeeded within a minute of the last delivery", succeeded, n)
	}
	return res, nil
}
