package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/internal/instant"
)

// The limits scenario's shape (issue 24): runs spread over limitKeys
// keys, each key limited to limitConcurrency runs in flight.
const (
	limitKeys        = 100
	limitConcurrency = 10
	// limitRounds is how many limited bursts a run of the scenario
	// makes, each between two unlimited ones.
	limitRounds = 3
)

// benchLimits: the cost of named limits on a burst. --limit-runs runs due
// at one instant, spread round-robin over 100 jobs, burned down again and
// again on the same instances, alternately by jobs with no limit and by
// jobs each naming its own key limited to 10 in flight (limitRounds
// limited bursts, each between two unlimited ones). The figure is the
// median over the rounds of a limited burst's runs/s over the mean of its
// two unlimited neighbours (goal ≥ 90%); every run must be delivered
// once, and no key may have had more than 10 runs in flight at the
// target.
func benchLimits(ctx context.Context, b *runner) (*result, error) {
	f := b.cfg
	n := f.LimitRuns
	e, err := b.clusterEnv(ctx, instanceOpts{}, true)
	if err != nil {
		return nil, err
	}
	defer e.close()
	res := &result{Scenario: "limits"}
	res.param("runs", n)
	res.param("keys", limitKeys)
	res.param("max_concurrency", limitConcurrency)
	res.clusterParams(&f)

	conc := limitConcurrency
	free := make([]int64, limitKeys)
	limited := make([]int64, limitKeys)
	for i := range limitKeys {
		key := fmt.Sprintf("bench-key-%03d", i)
		if _, err := e.db.PutLimit(ctx, &chronos.Limit{Key: key, MaxConcurrency: &conc}); err != nil {
			return nil, err
		}
		j := benchJob(fmt.Sprintf("bench-limits-free-%03d", i), e.target.base+"/free")
		if err := e.db.CreateJob(ctx, j); err != nil {
			return nil, err
		}
		free[i] = j.ID
		j = benchJob(fmt.Sprintf("bench-limits-keyed-%03d", i), e.target.base+"/keyed/"+key)
		j.LimitKey = &key
		if err := e.db.CreateJob(ctx, j); err != nil {
			return nil, err
		}
		limited[i] = j.ID
	}

	delivered := 0
	burst := func(name string, jobs []int64) (float64, error) {
		due, err := e.insertDueRuns(ctx, jobs, n)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		t0 := due
		if now := time.Now(); now.After(due) {
			t0 = now
			res.note("%s: the insert ended %s after the runs were due: timed from the commit", name, now.Sub(due).Round(time.Millisecond))
		}
		delivered += n
		if err := e.target.waitCount(ctx, delivered, 2*time.Minute+time.Duration(n)*time.Millisecond); err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		arr := e.target.snapshot()
		last := t0
		for _, a := range arr[delivered-n:] {
			last = instant.Later(last, a.at)
		}
		rate := float64(n) / last.Sub(t0).Seconds()
		res.metric(name+"_runs_per_s", rate, "runs/s")
		b.progress("limits: %s burst: %.0f runs/s", name, rate)
		return rate, nil
	}
	// Unlimited and limited bursts alternate, unlimited first and last:
	// each limited burst is weighed against the unlimited ones on either
	// side of it, and the figure is the median of those ratios. One
	// burst of 10,000 runs lasts about two seconds, and on a shared
	// machine a single limited one against its two neighbours swung
	// between 70 and 100 % from run to run of the same binary.
	frees := make([]float64, 0, limitRounds+1)
	keyeds := make([]float64, 0, limitRounds)
	ratios := make([]float64, 0, limitRounds)
	rate, err := burst("unlimited_0", free)
	if err != nil {
		return nil, err
	}
	frees = append(frees, rate)
	for round := range limitRounds {
		keyed, err := burst(fmt.Sprintf("limited_%d", round+1), limited)
		if err != nil {
			return nil, err
		}
		after, err := burst(fmt.Sprintf("unlimited_%d", round+1), free)
		if err != nil {
			return nil, err
		}
		keyeds = append(keyeds, keyed)
		ratios = append(ratios, 100*keyed/((frees[len(frees)-1]+after)/2))
		frees = append(frees, after)
	}
	res.metric("unlimited_runs_per_s", median(frees), "runs/s")
	res.metric("limited_runs_per_s", median(keyeds), "runs/s")
	res.target("limited_vs_unlimited", median(ratios), "%", "≥ 90%")
	bursts := len(frees) + len(keyeds)

	// Correctness: every run once, and never more than the limit of a
	// key at the target at once (from each request's arrival to its
	// run's finish, as the database recorded it).
	arr := e.target.snapshot()
	seen := make(map[int64]bool, len(arr))
	for _, a := range arr {
		seen[a.runID] = true
	}
	res.metric("duplicate_deliveries", float64(len(arr)-len(seen)), "requests")
	if len(seen) != bursts*n {
		res.fail("limits: %d of %d runs delivered", len(seen), bursts*n)
	}
	var over int
	// One sweep per key over its runs' starts and finishes in time order
	// (a finish before a start at the same instant: the original pairwise
	// count's strict bound), not a count of overlaps per run: that was
	// quadratic in a key's runs and took minutes once a key had 300.
	if err := e.db.Pool.QueryRow(ctx, `
		WITH ev AS (
			SELECT limit_key, started_at AS at, 1 AS d FROM job_runs
			 WHERE limit_key IS NOT NULL AND started_at IS NOT NULL AND finished_at IS NOT NULL
			UNION ALL
			SELECT limit_key, finished_at, -1 FROM job_runs
			 WHERE limit_key IS NOT NULL AND started_at IS NOT NULL AND finished_at IS NOT NULL
		), swept AS (
			SELECT d, sum(d) OVER (PARTITION BY limit_key ORDER BY at, d ROWS UNBOUNDED PRECEDING) AS in_flight FROM ev
		)
		SELECT count(*) FROM swept WHERE d = 1 AND in_flight > $1`,
		limitConcurrency).Scan(&over); err != nil {
		return nil, fmt.Errorf("check the limits: %w", err)
	}
	res.metric("runs_started_over_limit", float64(over), "runs")
	if over > 0 {
		res.fail("limits: %d runs started while their key had %d or more in flight", over, limitConcurrency)
	}
	return res, nil
}

// insertDueRuns inserts n pending manual runs spread round-robin over
// jobs, in one statement, all due at one instant a little after it can
// have committed (a second, and 30 µs a run), which it returns. A run
// takes its job's limit_key as it is inserted.
func (e *env) insertDueRuns(ctx context.Context, jobs []int64, n int) (time.Time, error) {
	due := time.Now().Add(time.Second + time.Duration(n)*30*time.Microsecond)
	if _, err := e.db.Pool.Exec(ctx, `
		INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at)
		SELECT ($1::bigint[])[1 + g % cardinality($1::bigint[])], $2, 'manual', $2
		  FROM generate_series(0, $3 - 1) g`, jobs, due, n); err != nil {
		return due, fmt.Errorf("insert %d runs: %w", n, err)
	}
	return due, nil
}
