package reactor

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// Host back-pressure and the circuit breaker (issue 24, section 2). The
// state is the cluster's, in the hosts table (sql/hosts.go); this file is
// how an instance feeds it:
//
//   - a 429 or 503 with Retry-After defers the run and every pending run of
//     its origin (sql.Defer), synchronously, in place of the attempt's
//     completion: the attempt does not count;
//   - the other outcomes are summed per origin and reported in the
//     background (sql.ReportHosts), failures always, answers only for the
//     origins in trouble (so a healthy cluster writes nothing more);
//   - every HostConfig.SweepInterval, sql.SweepHosts keeps the holds
//     (moves runs created since, picks the breaker's probe) and the list
//     of troubled origins is read again.

// HostConfig configures host back-pressure and the circuit breaker. Zero
// values mean the defaults below.
type HostConfig struct {
	// BreakerFailures consecutive connection failures or 5xx answers from
	// one origin open its breaker (10). Negative turns the breaker off
	// (failures are still counted and shown).
	BreakerFailures int
	// BreakerCooldown is how long an open breaker holds the origin's runs
	// before one probe goes (30s).
	BreakerCooldown time.Duration
	// SweepInterval is how often the holds are kept (1s): the claim may
	// walk past runs retried or handed back during a hold for about that
	// long (runs created during it are due at its end from the start).
	SweepInterval time.Duration
	// MaxDeferrals bounds the uncounted deferrals of one run (20): past it
	// a 429/503 is an attempt like any failure. Negative turns deferral
	// off.
	MaxDeferrals int
	// MaxDeferral caps one Retry-After (1h).
	MaxDeferral time.Duration
	// SlowCall: an origin with a call in flight this long, or whose last
	// call took this long, is slow, and may not take the SlotReserve
	// last worker slots (the bulkhead, bulkhead.go) (1s). Negative turns
	// the bulkhead off.
	SlowCall time.Duration
	// SlotReserve worker slots are kept from slow origins (a quarter of
	// WorkerConcurrency, at least 1). Negative turns the bulkhead off.
	SlotReserve int
}

// Defaults of HostConfig.
const (
	DefaultBreakerFailures   = 10
	DefaultBreakerCooldown   = 30 * time.Second
	DefaultHostSweepInterval = time.Second
	DefaultMaxDeferrals      = 20
	DefaultMaxDeferral       = time.Hour
)

func (c HostConfig) withDefaults() HostConfig {
	if c.BreakerFailures == 0 {
		c.BreakerFailures = DefaultBreakerFailures
	}
	if c.BreakerCooldown <= 0 {
		c.BreakerCooldown = DefaultBreakerCooldown
	}
	if c.SweepInterval <= 0 {
		c.SweepInterval = DefaultHostSweepInterval
	}
	if c.MaxDeferrals == 0 {
		c.MaxDeferrals = DefaultMaxDeferrals
	}
	if c.MaxDeferral <= 0 {
		c.MaxDeferral = DefaultMaxDeferral
	}
	if c.SlowCall == 0 {
		c.SlowCall = DefaultSlowCall
	}
	return c
}

// breaker is the sql form of the configuration.
func (c HostConfig) breaker() sql.Breaker {
	return sql.Breaker{Failures: max(c.BreakerFailures, 0), Cooldown: c.BreakerCooldown}
}

// hostTracker sums outcomes per origin until its loop reports them.
type hostTracker struct {
	r    *Reactor
	wake chan struct{} // coalescing: reports are waiting

	// busy: this instance delivered something since the last sweep. An
	// instance that delivers nothing needs no list of troubled origins,
	// and while no origin is held or troubled an idle instance reads
	// nothing at all.
	busy atomic.Bool
	// ready: the hosts table exists (a binary may run ahead of its
	// schema for a while; then it defers and reports nothing).
	ready atomic.Bool

	mu       sync.Mutex
	pending  map[string]*sql.HostReport
	troubled map[string]bool // origins with failures counted or an open breaker
	held     bool            // at the last read, some origin held runs back
	ticks    int             // sweeps so far (the leader reads every leaderSweepEvery-th at least)
}

// leaderSweepEvery: the leader reads the hosts table at least every this
// many sweeps (5 s by default), even idle, so that a hold whose instance
// died is kept by someone.
const leaderSweepEvery = 5

func newHostTracker(r *Reactor) *hostTracker {
	return &hostTracker{r: r, wake: make(chan struct{}, 1), pending: map[string]*sql.HostReport{},
		troubled: map[string]bool{}}
}

// deferrable reports whether an attempt's answer asks for a deferral: 429
// or 503 with a Retry-After of at least a second.
func deferrable(res attemptResult) bool {
	return res.HasRetry && res.RetryAfter >= time.Second &&
		(res.StatusCode == http.StatusTooManyRequests || res.StatusCode == http.StatusServiceUnavailable)
}

// deferRun defers c after its host asked for it (see sql.Defer). It
// reports whether it did: then the run is pending again and the caller
// records nothing; otherwise (deferral off, the run's deferrals used up,
// a failing database) the answer is recorded as an attempt as usual.
func (h *hostTracker) deferRun(c sql.Claimed, origin string, res attemptResult) (done bool) {
	cfg := h.r.cfg.Hosts
	if cfg.MaxDeferrals < 0 || origin == "" || !deferrable(res) {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), dbWriteTimeout)
	defer cancel()
	if !h.isReady(ctx) {
		return false
	}
	h.busy.Store(true)
	lease := c.Lease()
	d, err := h.r.db.Defer(ctx, sql.Deferral{Lease: lease, Origin: origin, Delay: min(res.RetryAfter, cfg.MaxDeferral),
		StatusCode: res.StatusCode, Error: res.Err, MaxDeferrals: cfg.MaxDeferrals})
	switch {
	case errors.Is(err, sql.ErrLeaseLost):
		leaseLost(h.r.log, h.r.bus, h.r.cfg.Instance, lease, c.Run.JobID, "defer", err)
		return true
	case err != nil:
		h.r.log.Error("defer run failed; recording the answer as an attempt", "run_id", lease.RunID, "origin", origin, "err", err)
		return false
	case !d.Deferred:
		return false
	}
	h.r.disp.hint(h.r.now().Add(time.Until(d.Until)))
	if d.Started {
		until := d.Until.UTC()
		h.r.log.Info("host deferred its runs", "origin", origin, "until", until, "moved", d.Moved, "status", res.StatusCode)
		h.r.bus.Publish(chronos.Event{Type: chronos.EventHostDeferred, Instance: h.r.cfg.Instance, Origin: origin,
			Until: &until, RunID: lease.RunID, JobID: c.Run.JobID, Count: d.Moved, StatusCode: res.StatusCode})
	}
	return true
}

// observe adds an attempt's outcome to its origin's report.
func (h *hostTracker) observe(origin string, runID int64, res attemptResult) {
	if !h.busy.Load() {
		h.busy.Store(true)
	}
	if origin == "" {
		return
	}
	// Recorded even before the first sweep has found the hosts table:
	// report decides, so the first deliveries after a start count too
	// (a breaker's first failures were dropped when they came before it).
	answered := res.StatusCode != 0 && !res.HostFailure
	h.mu.Lock()
	rep := h.pending[origin]
	switch {
	case res.HostFailure:
		if rep == nil {
			rep = &sql.HostReport{Origin: origin}
			h.pending[origin] = rep
		}
		rep.Failures++
		rep.FailedRuns = append(rep.FailedRuns, runID)
		rep.StatusCode, rep.Error = res.StatusCode, res.Err
	case answered && (rep != nil || h.troubled[origin]):
		if rep == nil {
			rep = &sql.HostReport{Origin: origin}
			h.pending[origin] = rep
		}
		rep.Answered = true
		rep.Failures, rep.FailedRuns = 0, nil // failures before an answer are not consecutive
	default:
		h.mu.Unlock()
		return
	}
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// run reports outcomes as they come and sweeps every SweepInterval, until
// ctx ends.
func (h *hostTracker) run(ctx context.Context) {
	t := time.NewTicker(h.r.cfg.Hosts.SweepInterval)
	defer t.Stop()
	h.sweep(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.wake:
			h.report(ctx)
		case <-t.C:
			h.report(ctx) // what a failed report kept, if anything
			h.sweep(ctx)
		}
	}
}

// report writes the outcomes summed since the last report.
func (h *hostTracker) report(ctx context.Context) {
	h.mu.Lock()
	reps := make([]sql.HostReport, 0, len(h.pending))
	for o, rep := range h.pending {
		reps = append(reps, *rep)
		delete(h.pending, o)
		if rep.Failures > 0 {
			h.troubled[o] = true
		}
	}
	h.mu.Unlock()
	if len(reps) == 0 {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, dbWriteTimeout)
	defer cancel()
	if !h.isReady(rctx) {
		return // not migrated that far yet: nothing to record outcomes in
	}
	changes, err := h.r.db.ReportHosts(rctx, reps, h.r.cfg.Hosts.breaker())
	if err != nil {
		if ctx.Err() == nil {
			// Kept for the next report (one transaction: none of it was
			// recorded), so a failing write loses no failure count.
			h.r.log.Warn("report host outcomes failed; kept for the next report", "err", err)
			h.requeue(reps)
		}
		return
	}
	for _, c := range changes {
		e := chronos.Event{Instance: h.r.cfg.Instance, Origin: c.Origin, Count: c.Failures}
		if c.Closed {
			e.Type = chronos.EventHostBreakerClosed
			h.r.log.Info("host breaker closed", "origin", c.Origin, "moved", c.Moved)
			h.r.bus.Publish(e)
		}
		if c.Opened {
			until := c.OpenUntil.UTC()
			e.Type, e.Until = chronos.EventHostBreakerOpened, &until
			h.r.log.Warn("host breaker opened", "origin", c.Origin, "failures", c.Failures, "until", until, "moved", c.Moved)
			h.r.bus.Publish(e)
		}
	}
}

// sweep reads which origins are in trouble and, when any holds runs
// back, keeps the holds (sql.SweepHosts). It reads at start, while this
// instance delivers or the last read found trouble, and on the leader
// every leaderSweepEvery sweeps: an idle follower of a healthy cluster
// makes no query for it. (Runs retried during a hold are held by the
// claim all the same; the sweep only keeps the claims that walk past them
// cheap, and claims happen where deliveries do.)
func (h *hostTracker) sweep(ctx context.Context) {
	h.mu.Lock()
	quiet := !h.held && len(h.troubled) == 0
	first := h.ticks == 0
	h.ticks++
	due := h.ticks%leaderSweepEvery == 0
	h.mu.Unlock()
	if !h.busy.Swap(false) && quiet && !first && !(due && h.r.IsLeader()) && h.ready.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, dbWriteTimeout)
	defer cancel()
	if !h.isReady(ctx) {
		return // not migrated that far yet: asked again next sweep
	}
	troubled, held, err := h.r.db.TroubledHosts(ctx)
	if err != nil {
		if ctx.Err() == nil {
			h.r.log.Warn("list troubled hosts failed", "err", err)
		}
		return
	}
	set := make(map[string]bool, len(troubled))
	for _, o := range troubled {
		set[o] = true
	}
	h.mu.Lock()
	h.troubled, h.held = set, held
	h.mu.Unlock()
	if !held {
		return
	}
	if res, err := h.r.db.SweepHosts(ctx, h.r.cfg.Hosts.BreakerCooldown); err != nil {
		if ctx.Err() == nil {
			h.r.log.Warn("sweep hosts failed", "err", err)
		}
	} else if res.Moved > 0 {
		h.r.log.Debug("host holds kept", "origins", res.Held, "moved", res.Moved, "probes", res.Probes)
	}
}

// isReady reports whether the hosts table exists, asking the database
// until it does (then the answer is kept).
func (h *hostTracker) isReady(ctx context.Context) bool {
	if h.ready.Load() {
		return true
	}
	if !h.r.db.HostsReady(ctx) {
		return false
	}
	h.ready.Store(true)
	return true
}

// requeue puts reports that could not be written back in front of what
// came since: failures add up, and an answer that came since resets them.
func (h *hostTracker) requeue(reps []sql.HostReport) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, old := range reps {
		cur := h.pending[old.Origin]
		if cur == nil {
			rep := old
			h.pending[old.Origin] = &rep
			continue
		}
		if cur.Answered {
			continue // answered since: the older failures are not consecutive
		}
		cur.Answered = cur.Answered || old.Answered
		cur.Failures += old.Failures
		cur.FailedRuns = append(append([]int64(nil), old.FailedRuns...), cur.FailedRuns...)
	}
}
