package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/reactor"
	"github.com/chronoshq/chronos/sql"
)

// herdAttempts is how often herd starts over when inserting the jobs took
// too long for the instant they were due at.
const herdAttempts = 3

// herdCalibration is how many jobs herd inserts first (never due) to
// learn how fast this machine inserts them.
const herdCalibration = 1000

// herdMaterializeCost is how long the bench allows the materializer per
// job of a herd before its instant (5,000 jobs a second).
const herdMaterializeCost = 200 * time.Microsecond

// The design's targets for a herd, printed beside the figures.
const (
	herdFirstTarget = 20 * time.Millisecond
	herdLastTarget  = 10 * time.Second
)

// benchHerd: M cron jobs whose next occurrence is the same instant T, as
// at the top of the hour. The jobs are bulk-inserted (as scale does; no
// API), the instances run and a leader is elected before T, and T leaves
// the materializer its whole lookahead after the insert. From T: the
// first and the last delivery, p50 and p99 of each job's delivery, and
// the CPU per run of chronos and of Postgres from the insert to the last
// completion; no occurrence may be missed or delivered twice.
func benchHerd(ctx context.Context, b *runner) (*result, error) {
	return retryDue(ctx, b, "herd", "inserting the jobs", herdAttempts, herdOnce)
}

// herdExpr is a six-field cron expression (seconds first) that fires at
// t, in UTC, once a year.
func herdExpr(t time.Time) string {
	t = t.UTC()
	return fmt.Sprintf("%d %d %d %d %d *", t.Second(), t.Minute(), t.Hour(), t.Day(), int(t.Month()))
}

// herdOnce is one attempt of herd; need is how long the insert is known
// to take (0: estimate it). A nil result with a nil error means the
// insert ended too close to T; took says how long it took.
func herdOnce(ctx context.Context, e *env, f Config, need time.Duration) (res *result, took time.Duration, err error) {
	m := f.HerdJobs
	res = &result{Scenario: "herd"}
	res.param("jobs", m)
	res.clusterParams(&f)

	// Calibrate: jobs due next year, inserted the same way.
	t0 := time.Now()
	if _, err := e.insertCronJobs(ctx, cronJobs{n: herdCalibration, name: "bench-herd-cal-", expr: "0 0 1 1 *",
		next: time.Date(time.Now().UTC().Year()+1, 1, 1, 0, 0, 0, 0, time.UTC), url: e.target.base + "/cal"}); err != nil {
		return nil, 0, err
	}
	estimate := max(need, time.Since(t0)*time.Duration(m)/herdCalibration*3/2)
	// The jobs must exist a whole lookahead before T, as they would at the
	// top of an hour: the materializer may prepare the runs that early.
	// A sparse job's run may be created up to sql.EarlyLookahead ahead:
	// the jobs are inserted early enough for the materializer to create
	// them all at 5,000 a second (no need to wait 30 s for a small herd).
	lead := reactor.DefaultLookahead + time.Second +
		min(time.Duration(m)*herdMaterializeCost, sql.EarlyLookahead-reactor.DefaultLookahead)
	due := time.Now().Add(estimate + lead).Truncate(time.Second).Add(time.Second)
	expr := herdExpr(due)
	if next, err := chronos.NextOccurrence(expr, time.UTC, due.Add(-time.Second)); err != nil || !next.Equal(due) {
		return nil, 0, fmt.Errorf("cron expression %q: next occurrence %s (%v), want %s", expr, next, err, due)
	}
	e.b.progress("herd: inserting %d jobs on %q due at %s (in %s)", m, expr, due.Format("15:04:05"), time.Until(due).Round(time.Millisecond))
	t0 = time.Now()
	earlyAt := due.Add(-sql.EarlyLookahead)
	bypassed, err := e.insertCronJobs(ctx, cronJobs{n: m, name: "bench-herd-", expr: expr, next: due, early: &earlyAt,
		url: e.target.base + "/h", perJob: true})
	if err != nil {
		return nil, 0, err
	}
	inserted := time.Now()
	took = inserted.Sub(t0)
	if inserted.After(due.Add(-reactor.DefaultLookahead)) {
		return nil, took, nil
	}
	cpu := newCPUMeter(ctx, e)
	cpu0, err := cpu.sample()
	if err != nil {
		return nil, 0, err
	}
	res.metric("insert_jobs_per_s", float64(m)/took.Seconds(), "jobs/s")
	if bypassed {
		res.note("bulk insert ran with session_replication_role=replica: no per-job NOTIFY")
	}

	// Wait for T, then for a delivery per job (or until it is hopeless:
	// what is still missing then is missed), then one more beat, so a
	// duplicate right behind its first delivery counts.
	if err := sleepCtx(ctx, time.Until(due)); err != nil {
		return nil, 0, err
	}
	giveUp := due.Add(time.Minute + time.Duration(m)*500*time.Microsecond)
	for e.target.count() < m && time.Now().Before(giveUp) {
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return nil, 0, err
		}
	}
	if err := sleepCtx(ctx, 500*time.Millisecond); err != nil {
		return nil, 0, err
	}
	cpu1, err := cpu.sample() // the last completions included
	if err != nil {
		return nil, 0, err
	}

	firsts := make(map[int]time.Time, m) // job number -> its first delivery
	doubled, unexpected := 0, 0
	var early time.Duration
	for _, a := range e.target.snapshot() {
		num, err := strconv.Atoi(strings.TrimPrefix(a.path, "/h/"))
		if err != nil || !strings.HasPrefix(a.path, "/h/") || num < 1 || num > m || !a.scheduledAt.Equal(due) {
			unexpected++
			continue
		}
		if a.at.Before(due) {
			early = max(early, due.Sub(a.at))
		}
		if at, ok := firsts[num]; ok {
			doubled++
			if a.at.Before(at) {
				firsts[num] = a.at
			}
			continue
		}
		firsts[num] = a.at
	}
	lags := make([]time.Duration, 0, len(firsts))
	for _, at := range firsts {
		lags = append(lags, at.Sub(due))
	}
	p := percentiles(lags)
	missed := m - len(firsts)
	res.target("first_delivery", ms(p.min), "ms", "≤ "+herdFirstTarget.String())
	res.target("last_delivery", ms(p.max), "ms", "≤ "+herdLastTarget.String())
	res.ms("delivery_p50", p.p50)
	res.ms("delivery_p99", p.p99)
	res.metric("runs_per_s", float64(len(firsts))/p.max.Seconds(), "runs/s")
	res.metric("occurrences", float64(m), "runs")
	res.metric("missed", float64(missed), "runs")
	res.metric("doubled", float64(doubled), "requests")
	cpu.report(res, cpu0, cpu1, m, "run")
	res.note("T = %s; first %s target %s (%s), last %s target %s (%s)", due.Format("15:04:05"),
		p.min.Round(time.Microsecond), herdFirstTarget, met(p.min <= herdFirstTarget),
		p.max.Round(time.Millisecond), herdLastTarget, met(p.max <= herdLastTarget))
	if missed != 0 {
		res.fail("herd: %d of %d occurrences missed", missed, m)
	}
	if doubled != 0 {
		res.fail("herd: %d occurrences delivered more than once", doubled)
	}
	if unexpected != 0 {
		res.fail("herd: %d deliveries for another instant or job", unexpected)
	}
	if early > 0 {
		res.fail("herd: a delivery arrived %s before its scheduled instant", early)
	}
	return res, 0, nil
}

// ms is a duration in milliseconds, as figures hold it.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// met words whether a target was met.
func met(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}
