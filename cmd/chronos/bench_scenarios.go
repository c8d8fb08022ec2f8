package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chronoshq/chronos"
)

// benchJob is a one-shot job whose run_at never comes during a bench: it
// exists to be triggered, or to own the runs the bench inserts.
func benchJob(name, url string) *chronos.Job {
	at := time.Now().AddDate(10, 0, 0)
	j := &chronos.Job{Name: name, TargetURL: url, RunAt: &at, Enabled: true}
	j.ApplyDefaults()
	j.MaxRetries = 0
	return j
}

// insertRuns inserts n pending manual runs of job, available at at, in one
// statement (one NOTIFY for all of them).
func (e *benchEnv) insertRuns(ctx context.Context, jobID int64, n int, at time.Time) error {
	_, err := e.db.Pool.Exec(ctx, `
		INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at)
		SELECT $1, $2, 'manual', $2 FROM generate_series(1, $3)`, jobID, at, n)
	if err != nil {
		return fmt.Errorf("insert %d runs: %w", n, err)
	}
	return nil
}

// benchThroughput: N runs due at the same instant; how long until the
// target has seen every one, and until every one is recorded succeeded.
func benchThroughput(ctx context.Context, b *bencher) (*benchResult, error) {
	f := b.flags
	e, err := b.newEnv(ctx)
	if err != nil {
		return nil, err
	}
	defer e.close()
	if err := e.startInstances(ctx, f.instances, false); err != nil {
		return nil, err
	}
	job := benchJob("bench-throughput", e.target.base+"/t")
	if err := e.db.CreateJob(ctx, job); err != nil {
		return nil, err
	}
	n := f.runs
	res := &benchResult{Scenario: "throughput"}
	res.param("runs", n)
	res.param("instances", f.instances)
	res.param("concurrency", f.concurrency)
	res.param("procs", f.procs)
	res.param("async_commit", f.asyncCommit)

	// The runs are inserted a little ahead of their available_at, so the
	// insert itself is not timed and every run becomes due at once.
	sampler, err := newStatSampler(ctx, e)
	if err != nil {
		return nil, err
	}
	defer sampler.close()
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
	if len(seen) != n {
		res.fail("throughput: %d of %d runs delivered", len(seen), n)
	}
	if succeeded != n {
		res.fail("throughput: %d of %d runs recorded succeeded within a minute of the last delivery", succeeded, n)
	}
	return res, nil
}

// trigger posts one manual trigger to instance 0 and returns the new run's id.
func (e *benchEnv) trigger(ctx context.Context, jobID int64) (int64, error) {
	var run chronos.Run
	if err := e.api(ctx, "POST", "/v1/jobs/"+strconv.FormatInt(jobID, 10)+"/trigger", nil, 202, &run); err != nil {
		return 0, err
	}
	return run.ID, nil
}

// benchLatency: POST /v1/jobs/{id}/trigger to the target receiving the
// request, one at a time on a quiet instance, then at a fixed rate while
// background runs stream in.
func benchLatency(ctx context.Context, b *bencher) (*benchResult, error) {
	f := b.flags
	e, err := b.newEnv(ctx)
	if err != nil {
		return nil, err
	}
	defer e.close()
	if err := e.startInstances(ctx, f.instances, false); err != nil {
		return nil, err
	}
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

	res := &benchResult{Scenario: "latency"}
	res.param("triggers", f.triggers)
	res.param("rate", f.rate)
	res.param("load_rate", f.loadRate)
	res.param("instances", f.instances)
	res.param("concurrency", f.concurrency)
	res.param("async_commit", f.asyncCommit)

	one := func() (deliver, answer time.Duration, err error) {
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
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
	for range f.triggers {
		d, a, err := one()
		if err != nil {
			return nil, err
		}
		deliver, answer = append(deliver, d), append(answer, a)
	}
	p, pa := percentiles(deliver), percentiles(answer)
	res.ms("p50", p.p50)
	res.ms("p90", p.p90)
	res.ms("p99", p.p99)
	res.ms("max", p.max)
	res.ms("api_p50", pa.p50)
	res.ms("api_p99", pa.p99)

	// Under load: background runs inserted in small batches every 10 ms,
	// due at once, while triggers go out at a fixed rate.
	phase := time.Duration(f.triggers) * time.Second / time.Duration(f.rate)
	loadCtx, stopLoad := context.WithCancel(ctx)
	var (
		loadWG   sync.WaitGroup
		loadErr  error
		inserted int
	)
	loadWG.Go(func() {
		// Each tick inserts what the rate owes by now, so a slow insert
		// (a busy machine) does not lower the rate.
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		began := time.Now()
		for {
			select {
			case <-loadCtx.Done():
				return
			case <-tick.C:
			}
			owed := int(time.Since(began).Seconds()*float64(f.loadRate)) - inserted
			if owed <= 0 {
				continue
			}
			if err := e.insertRuns(loadCtx, bg.ID, owed, time.Now()); err != nil {
				if loadCtx.Err() == nil {
					loadErr = err
				}
				return
			}
			inserted += owed
		}
	})
	time.Sleep(200 * time.Millisecond) // let the background reach its pace
	loadStart := time.Now()
	bgBefore := e.target.countPath("/bg")
	var (
		mu       sync.Mutex
		loaded   []time.Duration
		trigErrs []string
		trigWG   sync.WaitGroup
	)
	tick := time.NewTicker(time.Second / time.Duration(f.rate))
	for range f.triggers {
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
	if loadErr != nil {
		return nil, fmt.Errorf("background load: %w", loadErr)
	}
	if len(trigErrs) > 0 {
		return nil, fmt.Errorf("%d triggers under load failed, first: %s", len(trigErrs), trigErrs[0])
	}
	pl := percentiles(loaded)
	res.ms("load_p50", pl.p50)
	res.ms("load_p90", pl.p90)
	res.ms("load_p99", pl.p99)
	res.ms("load_max", pl.max)
	res.metric("load_background_per_s", float64(bgDuring)/loadEnd.Sub(loadStart).Seconds(), "runs/s")
	res.note("under load: %d triggers at %d/s over %s while %d background runs/s were inserted (%d in all)",
		f.triggers, f.rate, phase.Round(time.Millisecond), f.loadRate, inserted)
	return res, nil
}

// countPath is how many requests for path arrived so far.
func (t *benchTarget) countPath(path string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, a := range t.arrivals {
		if a.path == path {
			n++
		}
	}
	return n
}

// benchSchedule: K jobs on a seconds-level cron for D seconds; the lag of
// each delivery behind its scheduled instant, and every occurrence in the
// window delivered exactly once.
func benchSchedule(ctx context.Context, b *bencher) (*benchResult, error) {
	f := b.flags
	e, err := b.newEnv(ctx)
	if err != nil {
		return nil, err
	}
	defer e.close()
	if err := e.startInstances(ctx, f.instances, false); err != nil {
		return nil, err
	}
	if err := e.waitLeader(ctx); err != nil {
		return nil, err
	}
	k, seconds := f.jobs, int(f.duration/time.Second)
	if seconds < 1 {
		seconds = 1
	}
	res := &benchResult{Scenario: "schedule"}
	res.param("jobs", k)
	res.param("seconds", seconds)
	res.param("instances", f.instances)
	for i := range k {
		_, err := e.createJob(ctx, map[string]any{
			"name": fmt.Sprintf("bench-schedule-%d", i), "cron_expr": "*/1 * * * * *",
			"target_url": fmt.Sprintf("%s/s/%d", e.target.base, i), "max_retries": 0,
		})
		if err != nil {
			return nil, err
		}
	}
	// The window starts a whole second after the last job was created:
	// its first occurrence is well inside every job's schedule.
	firstAt := time.Now().Truncate(time.Second).Add(2 * time.Second)
	lastAt := firstAt.Add(time.Duration(seconds-1) * time.Second)
	expected := k * seconds
	inWindow := func(a benchArrival) bool {
		return strings.HasPrefix(a.path, "/s/") && !a.scheduledAt.Before(firstAt) && !a.scheduledAt.After(lastAt)
	}
	// Wait until the last occurrence is past, then until each one arrived
	// (or a generous grace ran out: what is still missing is missed).
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(time.Until(lastAt)):
	}
	type occurrence struct {
		path string
		at   int64 // scheduled instant, Unix ns
	}
	collect := func() map[occurrence][]time.Time {
		got := map[occurrence][]time.Time{}
		for _, a := range e.target.snapshot() {
			if inWindow(a) {
				o := occurrence{a.path, a.scheduledAt.UnixNano()}
				got[o] = append(got[o], a.at)
			}
		}
		return got
	}
	graceEnd := time.Now().Add(10 * time.Second)
	for len(collect()) < expected && time.Now().Before(graceEnd) {
		time.Sleep(20 * time.Millisecond)
	}
	// One more beat, so a duplicate right behind the first delivery counts.
	time.Sleep(200 * time.Millisecond)
	got := collect()
	dups := 0
	var lags []time.Duration
	// The earliest delivery of each scheduled instant, over all jobs: when
	// it is late too, the whole second was late (timer, claim); when only
	// the rest are, the burst itself took the time.
	earliest := map[int64]time.Duration{}
	for o, ats := range got {
		dups += len(ats) - 1
		first := ats[0]
		for _, at := range ats {
			if at.Before(first) {
				first = at
			}
		}
		lag := first.Sub(time.Unix(0, o.at))
		lags = append(lags, lag)
		if e, ok := earliest[o.at]; !ok || lag < e {
			earliest[o.at] = lag
		}
	}
	var firsts []time.Duration
	for _, d := range earliest {
		firsts = append(firsts, d)
	}
	p := percentiles(lags)
	missed := expected - len(got)
	res.ms("lag_p50", p.p50)
	res.ms("lag_p90", p.p90)
	res.ms("lag_p99", p.p99)
	res.ms("lag_max", p.max)
	res.ms("lag_min", p.min)
	pf := percentiles(firsts)
	res.ms("first_of_instant_p50", pf.p50)
	res.ms("first_of_instant_p99", pf.p99)
	res.metric("occurrences", float64(expected), "runs")
	res.metric("missed", float64(missed), "runs")
	res.metric("duplicated", float64(dups), "requests")
	if missed != 0 {
		res.fail("schedule: %d of %d occurrences missed", missed, expected)
	}
	if dups != 0 {
		res.fail("schedule: %d occurrences delivered more than once", dups)
	}
	if p.min < 0 {
		res.fail("schedule: a delivery arrived %s before its scheduled instant", -p.min)
	}
	return res, nil
}
