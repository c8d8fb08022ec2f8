package bench

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
)

// pruneInterval is how often the reactor's pruner deletes expired runs
// (reactor's pruneInterval, which is not configurable): pruning reaches
// its steady state one interval after the retention.
const pruneInterval = time.Minute

// sustainedJobs is how many jobs own the offered runs.
const sustainedJobs = 4

// sustainedCronJobs are sparse cron jobs (every second, misfire "all")
// that run beside the offered load, their lag read window by window: the
// issue asks that pruning never raise the cron lag's p99, and the offered
// runs' lag is not that. An offered run is inserted due at once and its
// lag counts the insert, its notification and its claim; a cron run is
// created ahead by the materializer and claimed ahead of its instant, as
// a user's cron job is. Their deliveries go to cronPath.
const (
	sustainedCronJobs = 20
	cronPath          = "/cron/"
)

// The sustained scenario's window: a minute, or 5 s with --quick.
const (
	sustainedWindow      = time.Minute
	sustainedQuickWindow = 5 * time.Second
)

// flatBand is how far a figure of the last window may be from the first
// window after the retention and still be called flat (25%); lag p99 may
// also be within flatLagSlack, since a few milliseconds of jitter would
// otherwise double a small lag.
const (
	flatBand     = 25.0
	flatLagSlack = 5 * time.Millisecond
)

// benchSustained: a steady offered load of R runs/s for D, with the
// instances' RUN_RETENTION short, watched window by window: runs/s
// delivered, lag p99 (available_at → delivery), and the sizes of
// job_runs, run_attempts and their indexes. The load is pending manual
// runs of a few jobs, inserted every 10 ms (as throughput's are): the
// cheapest way in, and from there the real run path (notify, claim,
// deliver, complete, prune). Whether runs/s, lag p99 and sizes are flat
// compares the last window with the first that starts once the first
// runs could be pruned (retention + the pruner's interval).
func benchSustained(ctx context.Context, b *runner) (*result, error) {
	f := b.cfg
	e, err := b.clusterEnv(ctx, instanceOpts{retention: f.Retention}, true)
	if err != nil {
		return nil, err
	}
	defer e.close()
	window := sustainedWindow
	if f.Quick {
		window = sustainedQuickWindow
	}
	rate, dur := f.SustainedRate, f.SustainedDuration
	res := &result{Scenario: "sustained"}
	res.param("rate", rate)
	res.param("seconds", dur.Seconds())
	res.param("retention", f.Retention.String())
	res.param("window", window.String())
	res.param("instances", f.Instances)
	res.param("concurrency", f.Concurrency)
	res.param("procs", f.Procs)

	var jobIDs []int64
	for i := range sustainedJobs {
		j := benchJob(fmt.Sprintf("bench-sustained-%d", i), e.target.base+"/s")
		if err := e.db.CreateJob(ctx, j); err != nil {
			return nil, err
		}
		jobIDs = append(jobIDs, j.ID)
	}
	for i := range sustainedCronJobs {
		_, err := e.createJob(ctx, map[string]any{
			"name": fmt.Sprintf("bench-sustained-cron-%d", i), "cron_expr": "*/1 * * * * *",
			"target_url": fmt.Sprintf("%s%s%d", e.target.base, cronPath, i), "max_retries": 0,
			"misfire": "all", // a stall shows as lag, never as folded occurrences
		})
		if err != nil {
			return nil, err
		}
	}
	var base int64
	if err := e.db.Pool.QueryRow(ctx, "SELECT coalesce(max(id), 0) FROM job_runs").Scan(&base); err != nil {
		return nil, fmt.Errorf("last run id: %w", err)
	}
	tally := &tally{base: base}
	e.target.setObserver(tally.observe)

	start := time.Now()
	load := &offeredLoad{e: e, jobs: jobIDs, rate: rate}
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var loadWG sync.WaitGroup
	loadWG.Go(func() { load.run(loadCtx, start, start.Add(dur)) })

	grid := table{Name: "per window", Columns: []string{"end_s", "runs_per_s", "lag_p50_ms", "lag_p99_ms", "cron_lag_p99_ms",
		"job_runs_mib", "job_runs_idx_mib", "attempts_mib", "attempts_idx_mib", "total_mib", "job_runs_rows"}}
	var (
		wins              []sustainedWin
		allLags, cronLags []time.Duration
	)
	for end := start.Add(window); ; end = end.Add(window) {
		last := !end.Before(start.Add(dur))
		if last {
			end = start.Add(dur)
		}
		if err := sleepCtx(ctx, time.Until(end)); err != nil {
			return nil, err
		}
		n, lags, cron := tally.cut()
		sz, err := e.historySizes(ctx)
		if err != nil {
			return nil, err
		}
		w := sustainedWin{end: end.Sub(start), length: window, delivered: n, lags: percentiles(lags),
			cronN: len(cron), cronLags: percentiles(cron), sizes: sz}
		if last {
			w.length = end.Sub(start) - time.Duration(len(wins))*window
		}
		allLags = append(allLags, lags...)
		cronLags = append(cronLags, cron...)
		wins = append(wins, w)
		grid.Rows = append(grid.Rows, w.row())
		b.progress("sustained %s: %.0f runs/s, lag p99 %s, cron lag p99 %s, job_runs %.1f MiB (+%.1f idx), run_attempts %.1f MiB (+%.1f idx), %d runs",
			w.end.Round(time.Second), w.perSecond(), w.lags.p99.Round(100*time.Microsecond), w.cronLags.p99.Round(100*time.Microsecond),
			mib(sz.runs.heap), mib(sz.runs.indexes), mib(sz.attempts.heap), mib(sz.attempts.indexes), sz.runs.rows)
		if last {
			break
		}
	}
	// The load ends by itself at its end, after its last insert: cancelling
	// it here could cut that insert after it committed, uncounted (a run
	// delivered that the load never reported: 499 inserted, 500 delivered).
	loadWG.Wait()
	if load.err != nil {
		return nil, fmt.Errorf("offered load: %w", load.err)
	}
	inserted := load.inserted
	duringD := 0
	for _, w := range wins {
		duringD += w.delivered
	}

	// Drain: what was offered must all arrive. A backlog (the instances
	// could not keep up) gets time in proportion.
	backlogAtStop := inserted - tally.count()
	drainLimit := time.Minute + time.Duration(float64(backlogAtStop)/math.Max(float64(duringD)/dur.Seconds(), 1)*2*float64(time.Second))
	drainStart := time.Now()
	for tally.count() < inserted && time.Since(drainStart) < drainLimit {
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return nil, err
		}
	}
	drained := time.Since(drainStart)
	if err := sleepCtx(ctx, 200*time.Millisecond); err != nil { // a duplicate right behind counts
		return nil, err
	}
	delivered, dups := tally.totals()

	p := percentiles(allLags)
	res.metric("offered_per_s", float64(inserted)/dur.Seconds(), "runs/s")
	res.metric("delivered_per_s", float64(duringD)/dur.Seconds(), "runs/s")
	res.ms("lag_p50", p.p50)
	res.ms("lag_p99", p.p99)
	res.ms("lag_max", p.max)
	res.metric("cron_deliveries", float64(len(cronLags)), "runs")
	c := percentiles(cronLags)
	res.metric("cron_lag_p50", msOrNA(c.p50, len(cronLags)), "ms")
	res.target("cron_lag_p99", msOrNA(c.p99, len(cronLags)), "ms", "≤ 10 ms")
	res.metric("cron_lag_max", msOrNA(c.max, len(cronLags)), "ms")
	res.metric("inserted", float64(inserted), "runs")
	res.metric("delivered", float64(delivered), "runs")
	res.metric("duplicate_deliveries", float64(dups), "requests")
	res.metric("backlog_at_stop", float64(backlogAtStop), "runs")
	res.ms("drained_in", drained)
	lastWin := wins[len(wins)-1]
	res.metric("job_runs_mib", mib(lastWin.sizes.runs.heap), "MiB")
	res.metric("job_runs_idx_mib", mib(lastWin.sizes.runs.indexes), "MiB")
	res.metric("attempts_mib", mib(lastWin.sizes.attempts.heap), "MiB")
	res.metric("attempts_idx_mib", mib(lastWin.sizes.attempts.indexes), "MiB")
	flatness(res, wins, window, f.Retention)
	res.Tables = append(res.Tables, grid)
	if delivered < inserted {
		res.fail("sustained: %d of %d runs delivered within %s of the load's end", delivered, inserted, drainLimit.Round(time.Second))
	}
	return res, nil
}

// flatness compares the last full window with the first that starts once
// pruning could have reached its steady state, and says whether runs/s,
// lag p99 and the history's size stayed flat.
func flatness(res *result, wins []sustainedWin, window, retention time.Duration) {
	settled := retention + pruneInterval
	first, last := -1, len(wins)-1
	if last > 0 && wins[last].length < window {
		last-- // a short last window is noisy
	}
	for i, w := range wins {
		if w.end-w.length >= settled {
			first = i
			break
		}
	}
	if first < 0 || first >= last {
		for _, name := range []string{"runs_per_s_change", "lag_p99_change", "size_change"} {
			res.metric(name, nan, "%")
		}
		res.note("flat: n/a: the run needs windows after retention + the pruner's interval (%s) to compare, two at least", settled)
		return
	}
	a, z := wins[first], wins[last]
	tput := changePct(a.perSecond(), z.perSecond())
	lag := changePct(float64(a.lags.p99), float64(z.lags.p99))
	size := changePct(a.sizes.total(), z.sizes.total())
	res.metric("runs_per_s_change", tput, "%")
	res.metric("lag_p99_change", lag, "%")
	res.metric("size_change", size, "%")
	within := func(v float64) bool { return !math.IsNaN(v) && math.Abs(v) <= flatBand }
	lagFlat := within(lag) || (z.lags.p99-a.lags.p99).Abs() <= flatLagSlack
	res.note("flat (window ending %s vs %s, within ±%.0f%%%s): runs/s %s, lag p99 %s, size %s",
		z.end.Round(time.Second), a.end.Round(time.Second), flatBand, ", lag also within "+flatLagSlack.String(),
		yesNo(within(tput)), yesNo(lagFlat), yesNo(within(size)))
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}

// msOrNA is d in milliseconds, or n/a (NaN) when it is a percentile of
// no samples (n of them).
func msOrNA(d time.Duration, n int) float64 {
	if n == 0 {
		return nan
	}
	return ms(d)
}

// mib is bytes in MiB.
func mib(bytes float64) float64 { return bytes / (1 << 20) }

// sustainedWin is one window of the sustained scenario.
type sustainedWin struct {
	end       time.Duration // since the load started
	length    time.Duration
	delivered int
	lags      pct // the offered runs'
	cronN     int // deliveries of the sparse cron jobs (sustainedCronJobs)
	cronLags  pct // and their lags
	sizes     historySizes
}

func (w sustainedWin) perSecond() float64 { return float64(w.delivered) / w.length.Seconds() }

func (w sustainedWin) row() []float64 {
	return []float64{w.end.Seconds(), w.perSecond(), ms(w.lags.p50), ms(w.lags.p99), msOrNA(w.cronLags.p99, w.cronN),
		mib(w.sizes.runs.heap), mib(w.sizes.runs.indexes), mib(w.sizes.attempts.heap), mib(w.sizes.attempts.indexes),
		mib(w.sizes.total()), float64(w.sizes.runs.rows)}
}

// offeredLoad inserts pending runs at a steady rate: the sustained
// scenario's load, and the latency scenario's background runs.
type offeredLoad struct {
	e    *env
	jobs []int64
	rate int

	inserted int   // read after run returns
	err      error // the insert that failed, if one did
}

// run inserts, every 10 ms until end (zero: none) or ctx ends, what the
// rate owes by then, so a slow insert (a busy machine) does not lower the
// rate.
func (l *offeredLoad) run(ctx context.Context, start, end time.Time) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if !end.IsZero() && now.After(end) {
				now = end
			}
			owed := int(now.Sub(start).Seconds()*float64(l.rate)) - l.inserted
			if owed > 0 {
				at := time.Now()
				_, err := l.e.db.Pool.Exec(ctx, `
					INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at)
					SELECT ($1::bigint[])[1 + g % cardinality($1::bigint[])], $2, 'manual', $2
					  FROM generate_series(1, $3::int) g`, l.jobs, at, owed)
				if err != nil {
					if ctx.Err() == nil {
						l.err = fmt.Errorf("insert %d runs: %w", owed, err)
					}
					return
				}
				l.inserted += owed
			}
			if !end.IsZero() && !now.Before(end) {
				return
			}
		}
	}
}

// tally counts the sustained scenario's deliveries as they arrive, without
// keeping them: distinct runs in a bitset over the run ids, and the lags
// of the current window.
type tally struct {
	mu       sync.Mutex
	base     int64    // the load's run ids are above it
	seen     []uint64 // bit id-base-1: delivered
	distinct int
	dups     int
	winN     int
	winLags  []time.Duration
	winCron  []time.Duration // the cron jobs' lags (cronPath), apart
}

// observe is the target's observer.
func (t *tally) observe(a arrival) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if strings.HasPrefix(a.path, cronPath) {
		t.winCron = append(t.winCron, a.at.Sub(a.scheduledAt))
		return
	}
	t.winN++
	t.winLags = append(t.winLags, a.at.Sub(a.scheduledAt))
	i := a.runID - t.base - 1
	if i < 0 {
		t.dups++ // not a run of the load: counted as a stray request
		return
	}
	word, bit := int(i/64), uint64(1)<<(i%64)
	for word >= len(t.seen) {
		t.seen = append(t.seen, make([]uint64, max(len(t.seen), 1024))...)
	}
	if t.seen[word]&bit != 0 {
		t.dups++
		return
	}
	t.seen[word] |= bit
	t.distinct++
}

// cut ends the current window: its deliveries of the offered load and
// their lags, and the cron jobs' lags.
func (t *tally) cut() (n int, lags, cron []time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, lags, cron = t.winN, t.winLags, t.winCron
	t.winN, t.winLags, t.winCron = 0, nil, nil
	return n, lags, cron
}

// count is how many distinct runs arrived so far.
func (t *tally) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.distinct
}

// totals are the distinct runs delivered and the requests beyond them.
func (t *tally) totals() (distinct, dups int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.distinct, t.dups
}
