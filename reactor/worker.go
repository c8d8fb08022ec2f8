package reactor

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// dbWriteTimeout bounds a worker's own writes (start, release). They run on
// a context of their own: a write that records or hands back a run must not
// be cut off by the shutdown that caused it.
const dbWriteTimeout = 10 * time.Second

// startRecordDelay is how long a call may be in flight before the run is
// marked running (see deliver).
const startRecordDelay = 20 * time.Millisecond

// InterruptedByShutdown is the error of an attempt whose request was sent
// but whose answer shutdown did not wait for.
const InterruptedByShutdown = "interrupted by shutdown"

// deliver runs one claimed attempt: make the HTTP call while renewing the
// lease (marking the run running if the call takes a while), and queue the
// outcome for the completer. When
// shutdown cancels the call before its request was written, the run is
// handed back to pending instead, without counting the attempt; once
// written, it is an attempt that failed with InterruptedByShutdown. A run
// claimed ahead of its instant comes with its group's start (ahead, see
// groupAhead) and waits for the instant first; for the others ahead is
// nil.
func (r *Reactor) deliver(c sql.Claimed, ahead *aheadStart) {
	lease := c.Lease()
	defer func() {
		if p := recover(); p != nil {
			// A bug in one delivery must not take the instance down; the
			// run goes back to pending so it is not stuck until the reaper.
			r.log.Error("delivery panicked", "run_id", lease.RunID, "panic", fmt.Sprint(p))
			r.release(lease, c.Run.JobID)
		}
	}()

	// The bulkhead (bulkhead.go) first: a run of a slow origin that may
	// not take this slot goes back, uncounted, before anything is
	// written for it.
	origin := r.origins.of(c.Job.TargetURL)
	call, ok := r.bulk.acquire(origin, origin != "" && r.hosts.ready.Load())
	if !ok {
		r.postpone(c, origin)
		return
	}
	defer r.bulk.release(call) // on every way out; the call's end below is the first

	if ahead != nil && !r.startAhead(c, ahead) {
		return
	}

	// One context bounds the call by the job's timeout and lets a lost
	// lease cancel it.
	timeout := jobTimeout(c.Job)
	callCtx, cancelCall := context.WithTimeout(r.hard, timeout)
	defer cancelCall()
	var lost atomic.Bool
	onLost := func() {
		lost.Store(true)
		cancelCall()
	}

	// Start (status running, and the attempt's row) is written only when
	// the call is still in flight after startRecordDelay. Most calls are
	// done sooner, and for them Complete records the attempt, with the
	// worker's start time, in the batch it writes anyway: one commit per
	// run fewer, which is most of the database's work per run. The
	// outcome is queued only after a Start that did run, so the record is
	// never out of order. A run is claimed a moment before, so Start
	// finding the lease gone is all but impossible; if it does, the call
	// is cancelled like a lost renewal.
	started := make(chan error, 1)
	startTimer := time.AfterFunc(startRecordDelay, func() {
		err := r.starts.start(lease) // in a batch with the other workers' (starter.go)
		if errors.Is(err, sql.ErrLeaseLost) {
			onLost()
		}
		started <- err
	})
	ren := startRenewer(r.db, r.log, lease, r.cfg.LeaseDuration, func(error) { onLost() })
	res := r.exec.call(callCtx, c.Job, c.Run, timeout)
	r.bulk.release(call)
	var startErr error
	startRan := !startTimer.Stop()
	if startRan {
		startErr = <-started // it ran, or is running: wait for it
	}

	if lost.Load() {
		ren.stop()
		op := "renew"
		if errors.Is(startErr, sql.ErrLeaseLost) {
			op = "start"
		}
		leaseLost(r.log, r.bus, r.cfg.Instance, lease, c.Run.JobID, op, sql.ErrLeaseLost)
		return
	}
	if startErr != nil {
		// The start was not recorded (the database is struggling); the
		// outcome still is: Complete creates the attempt's row itself.
		r.log.Warn("start run failed", "run_id", lease.RunID, "err", startErr)
	}
	if res.StatusCode == 0 && r.hard.Err() != nil {
		if !res.Sent {
			// Shutdown ran out of grace before the request was written:
			// the target cannot have seen it, so this attempt never
			// happened as far as the run is concerned.
			ren.stop()
			r.release(lease, c.Run.JobID)
			return
		}
		// The request was on the wire: the target may have acted on it.
		// It is a counted, recorded, failed attempt that retries or
		// dead-letters like any other.
		res.Err = InterruptedByShutdown
	}
	// A host's deferral (429/503 with Retry-After) hands the run back
	// uncounted instead; any other outcome tells the host's breaker.
	if r.hosts.deferRun(c, origin, res) {
		ren.stop()
		return
	}
	r.hosts.observe(origin, lease.RunID, res)
	// The lease is renewed until the outcome is recorded, not just until
	// the target answered: a completion that waits on a slow or briefly
	// unreachable database must not let the reaper reclaim, and so
	// deliver again, a run whose target already answered.
	out := outcome(lease, c.Job, res)
	out.StartRecorded = startRan
	r.comp.submit(completion{out: out, run: c.Run, done: ren.release})
}

// waitUntil waits until t by the local clock. It is false when the hard
// shutdown came first.
func (r *Reactor) waitUntil(t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return r.hard.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-r.hard.Done():
		return false
	}
}

// outcome turns an attempt's result into what db.Complete records.
func outcome(l sql.Lease, job *chronos.Job, res attemptResult) sql.Outcome {
	o := sql.Outcome{
		Lease:      l,
		Success:    res.Success(),
		StatusCode: res.StatusCode,
		Error:      res.Err,
		Body:       res.Body,
		StartedAt:  res.StartedAt,
		FinishedAt: res.FinishedAt,
	}
	if !o.Success {
		o.RetryDelay = retryDelay(job, l.Attempt, res)
	}
	return o
}

// retryDelay is the wait before the next attempt after attempt n failed:
// the target's Retry-After on 429/503, capped at the job's backoff cap, or
// else the job's backoff.
func retryDelay(job *chronos.Job, n int, res attemptResult) time.Duration {
	if res.HasRetry {
		limit := time.Duration(job.BackoffMaxSeconds * float64(time.Second))
		if limit > 0 && res.RetryAfter > limit {
			return limit
		}
		return res.RetryAfter
	}
	return job.RetryDelay(n)
}

// postpone hands back a run of a slow origin that the bulkhead refused a
// slot (see sql.Postpone): uncounted, due a moment later, with the
// origin's other due runs unless they were moved already.
func (r *Reactor) postpone(c sql.Claimed, origin string) {
	lease := c.Lease()
	delay, others := r.bulk.postponement(origin)
	ctx, cancel := context.WithTimeout(context.Background(), dbWriteTimeout)
	defer cancel()
	res, err := r.db.Postpone(ctx, sql.Postponement{Lease: lease, Origin: origin, Delay: delay, Alone: !others})
	switch {
	case errors.Is(err, sql.ErrLeaseLost):
		leaseLost(r.log, r.bus, r.cfg.Instance, lease, c.Run.JobID, "postpone", err)
		return
	case err != nil:
		r.log.Error("postpone run failed; releasing it", "run_id", lease.RunID, "origin", origin, "err", err)
		r.release(lease, c.Run.JobID)
		return
	}
	r.disp.hint(r.now().Add(delay))
	r.log.Debug("run postponed: its host is slow", "run_id", lease.RunID, "origin", origin,
		"until", res.Until.UTC(), "moved", res.Moved)
}

// release hands a run back to pending without counting the attempt.
func (r *Reactor) release(l sql.Lease, jobID int64) {
	ctx, cancel := context.WithTimeout(context.Background(), dbWriteTimeout)
	defer cancel()
	err := r.db.Release(ctx, l)
	switch {
	case errors.Is(err, sql.ErrLeaseLost):
		leaseLost(r.log, r.bus, r.cfg.Instance, l, jobID, "release", err)
	case err != nil:
		r.log.Error("release run failed; the reaper will take it back", "run_id", l.RunID, "err", err)
	default:
		r.log.Info("run released", "run_id", l.RunID, "attempt", l.Attempt)
	}
}

// releaseQueued is release for claimed runs that were never sent (the
// prefetch queue's, see handBack), all in one statement.
func (r *Reactor) releaseQueued(cs []sql.Claimed) {
	ctx, cancel := context.WithTimeout(context.Background(), dbWriteTimeout)
	defer cancel()
	leases := make([]sql.Lease, len(cs))
	for i, c := range cs {
		leases[i] = c.Lease()
	}
	errs, err := r.db.ReleaseMany(ctx, leases)
	if err != nil {
		r.log.Error("release runs failed; the reaper will take them back", "runs", len(cs), "err", err)
		return
	}
	released := 0
	for i, err := range errs {
		if err != nil {
			leaseLost(r.log, r.bus, r.cfg.Instance, leases[i], cs[i].Run.JobID, "release", err)
			continue
		}
		released++
	}
	r.log.Info("queued runs released", "count", released)
}
