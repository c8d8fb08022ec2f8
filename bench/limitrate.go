package bench

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/chronoshq/chronos"
)

// The limit-rate scenario's shape (issue 24): one key limited to 50 runs
// a second, enforced by two instances at once.
const (
	limitRatePerSecond = 50
	limitRateInstances = 2
	limitRateJobs      = 100 // one-shot jobs naming the key, owning the runs
	// limitRateWarmup is not measured: the bucket starts full, so the
	// first instant delivers a burst of a whole rate's worth.
	limitRateWarmup = 2 * time.Second
	// limitRateSurplus is how many seconds' worth of runs are inserted
	// beyond the warm-up and the window: the key stays saturated even if
	// it ran somewhat over its rate.
	limitRateSurplus = 18
)

// benchLimitRate: a rate limit held by two instances. At least two
// `chronos serve` instances (child processes when the binary can serve)
// on one fresh database, a limit of rate 50 per_seconds 1, and
// 50 × (window + 20 s) runs of 100 one-shot jobs naming it due at one
// instant: 4,000 for the 60 s --duration. The figure is what reached the
// target per second over the --duration window that starts
// limitRateWarmup after the instant: the mean, the fewest and the most
// in one second, and the window's total against rate × seconds (goal
// within ±5%). Every run is delivered at most once, and the runs must
// not run out before the window ends (bench fails otherwise).
func benchLimitRate(ctx context.Context, b *runner) (*result, error) {
	f := b.cfg
	secs := int(f.Duration / time.Second)
	n := limitRatePerSecond * (secs + int(limitRateWarmup/time.Second) + limitRateSurplus)
	instances := max(f.Instances, limitRateInstances)
	child := childBinary(f.Binary)
	e, err := b.clusterEnvOf(ctx, instances, instanceOpts{child: child}, true)
	if err != nil {
		return nil, err
	}
	defer e.close()
	res := &result{Scenario: "limit-rate"}
	res.param("rate", fmt.Sprintf("%d/s", limitRatePerSecond))
	res.param("window_s", secs)
	res.param("runs", n)
	res.param("instances", instances)
	res.param("child_processes", child)
	res.param("concurrency", f.Concurrency)
	if !child {
		res.note("in-process instances (no chronos binary: pass --binary)")
	}

	key := "bench-rate"
	rate, per := limitRatePerSecond, 1
	if _, err := e.db.PutLimit(ctx, &chronos.Limit{Key: key, Rate: &rate, PerSeconds: &per}); err != nil {
		return nil, err
	}
	jobs := make([]int64, limitRateJobs)
	for i := range jobs {
		j := benchJob(fmt.Sprintf("bench-rate-%03d", i), e.target.base+"/rate")
		j.LimitKey = &key
		if err := e.db.CreateJob(ctx, j); err != nil {
			return nil, err
		}
		jobs[i] = j.ID
	}
	due, err := e.insertDueRuns(ctx, jobs, n)
	if err != nil {
		return nil, err
	}
	if late := time.Since(due); late > 0 {
		res.note("the insert ended %s after the runs were due", late.Round(time.Millisecond))
	}
	from := due.Add(limitRateWarmup)
	to := from.Add(time.Duration(secs) * time.Second)
	b.progress("limit-rate: %d runs due at %s, measuring %d s from %s", n, due.Format("15:04:05.000"), secs, from.Format("15:04:05.000"))
	if err := sleepCtx(ctx, time.Until(to)+100*time.Millisecond); err != nil {
		return nil, err
	}

	arr := e.target.snapshot()
	perSecond := make([]int, secs)
	seen := make(map[int64]bool, len(arr))
	burst := 0
	for _, a := range arr {
		seen[a.runID] = true
		switch {
		case a.at.Before(from):
			if a.at.Before(due.Add(time.Second)) {
				burst++
			}
		case a.at.Before(to):
			perSecond[int(a.at.Sub(from)/time.Second)]++
		}
	}
	total, low, high := 0, math.MaxInt, 0
	for _, c := range perSecond {
		total += c
		low, high = min(low, c), max(high, c)
	}
	want := limitRatePerSecond * secs
	res.metric("delivered_in_window", float64(total), "runs")
	res.metric("per_second_mean", float64(total)/float64(secs), "runs/s")
	res.metric("per_second_min", float64(low), "runs")
	res.metric("per_second_max", float64(high), "runs")
	res.target("deviation", 100*float64(total-want)/float64(want), "%", fmt.Sprintf("within ±5%% of %d", want))
	res.metric("first_second", float64(burst), "runs")
	res.metric("duplicate_deliveries", float64(len(arr)-len(seen)), "requests")
	res.note("the bucket starts full: the first second delivers up to twice the rate (first_second); the window starts %s after the runs were due", limitRateWarmup)
	if len(arr) >= n {
		res.fail("limit-rate: all %d runs were delivered by the window's end: the key was not saturated", n)
	}
	if len(arr) != len(seen) {
		res.fail("limit-rate: %d runs delivered twice", len(arr)-len(seen))
	}
	return res, nil
}
