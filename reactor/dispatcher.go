package reactor

import (
	"context"
	"sync"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
	"github.com/sourcegraph/conc/pool"
)

// Dispatcher tuning.
const (
	claimTimeout   = 10 * time.Second
	claimRetry     = time.Second      // after a failed claim
	hintBuffer     = 1024             // queued timer hints from the completer
	eventBuffer    = 1024             // queued events carrying available_at
	skewRetryFirst = time.Millisecond // first re-check of a run that looked due but was not claimable
	skewRetryMax   = 100 * time.Millisecond
	// Under a backlog, a slot freed alone waits up to claimBatchWait for
	// others, so a claim fills a quarter of the pool rather than one slot:
	// every claim is a commit, and commits are what the database has least
	// of. Wakes by events (a triggered run) never wait.
	claimBatchWait = time.Millisecond
)

// dispatcher claims runs and hands them to the worker pool. One goroutine
// (run) does all the claiming, so claims never race each other for slots;
// workers only give slots back.
type dispatcher struct {
	r     *Reactor
	pool  *pool.Pool
	slots chan struct{} // a token per free worker slot
	batch int           // free slots worth a claim of their own under a backlog
	freed chan struct{} // coalescing: a worker gave a slot back, or the queue ran low
	hints chan time.Time
	queue *prefetch // claimed runs waiting for a worker (prefetch.go)
	// handing are the releases of queued runs handed back (handBack).
	handing sync.WaitGroup
}

func newDispatcher(r *Reactor) *dispatcher {
	d := &dispatcher{
		r:     r,
		pool:  pool.New().WithMaxGoroutines(r.cfg.WorkerConcurrency),
		slots: make(chan struct{}, r.cfg.WorkerConcurrency),
		freed: make(chan struct{}, 1),
		hints: make(chan time.Time, hintBuffer),
		batch: max(1, r.cfg.WorkerConcurrency/4),
		queue: newPrefetch(r.cfg.WorkerConcurrency, r.cfg.LeaseDuration),
	}
	for range r.cfg.WorkerConcurrency {
		d.slots <- struct{}{}
	}
	return d
}

// hint tells the dispatcher that a run becomes available at t (a local
// retry), so its timer fires then. It never blocks; a hint lost to a full
// queue is caught by the next NextAvailable or idle poll.
func (d *dispatcher) hint(t time.Time) {
	select {
	case d.hints <- t:
	default:
	}
}

// free is the number of free worker slots.
func (d *dispatcher) free() int { return len(d.slots) }

// run claims until ctx ends, then waits for nothing: the caller waits for
// the pool (d.wait), so shutdown can bound that wait.
func (d *dispatcher) run(ctx context.Context) {
	r := d.r
	// Queued runs were never sent: they go back to pending when claiming
	// stops, while the deliveries in flight have their grace.
	defer d.stopQueue()
	// Events that carry an available_at go through a subscription, which
	// tells the dispatcher when; the others only need a coalescing wake.
	// The split does not depend on the clock, so no event falls between.
	sub := r.bus.Subscribe(eventBuffer, func(e chronos.Event) bool {
		return e.WakesDispatcher() && (e.AvailableAt != nil || e.Type == chronos.EventResync)
	})
	defer sub.Close()
	wake := r.bus.SubscribeWake(func(e chronos.Event) bool {
		return e.WakesDispatcher() && e.AvailableAt == nil && e.Type != chronos.EventResync
	})
	defer wake.Close()

	idle := time.NewTimer(r.cfg.IdlePollInterval)
	defer idle.Stop()
	timer := disarmedTimer()
	defer timer.Stop()
	batchTimer := disarmedTimer()
	defer batchTimer.Stop()
	batchArmed := false

	var (
		next      time.Time // when timer fires; zero when disarmed
		claimNow  = true    // claim at start
		needNext  = true    // ask the database for the earliest future run
		mayHave   bool      // the last claim was full or had no slots: more may wait
		skewDelay = skewRetryFirst
	)
	ahead := r.cfg.ClaimAhead
	// arm makes the dispatcher claim when a run available at t may be
	// claimed: ClaimAhead before t.
	arm := func(t time.Time) {
		t = t.Add(-ahead)
		now := r.now()
		if !t.After(now) {
			claimNow = true
			return
		}
		if next.IsZero() || t.Before(next) {
			next = t
			timer.Reset(t.Sub(now))
		}
	}

	for {
		if sub.TakeDropped() > 0 {
			// Events with times were lost: ask the database instead.
			claimNow, needNext = true, true
		}
		justClaimed := false
		if claimNow {
			claimNow, justClaimed = false, true
			n, full, err := d.claim(ctx)
			switch {
			case err != nil:
				arm(r.now().Add(claimRetry))
			case n > 0:
				skewDelay = skewRetryFirst
			}
			mayHave = full
			idle.Reset(r.cfg.IdlePollInterval)
			if ctx.Err() != nil {
				return
			}
		}
		if needNext && d.free() > 0 {
			needNext = false
			t, err := d.nextAvailable(ctx)
			switch {
			case err != nil:
				arm(r.now().Add(claimRetry))
			case t == nil:
			case t.Add(-ahead).After(r.now()):
				arm(*t)
			case justClaimed && !mayHave:
				// A pending run looked due, yet the claim just made did
				// not get it: another instance is claiming it right now,
				// or the database clock is a little behind ours. Look
				// again shortly, backing off so this never spins.
				arm(r.now().Add(skewDelay))
				skewDelay = min(2*skewDelay, skewRetryMax)
			default:
				claimNow = true
			}
		}
		if claimNow {
			continue
		}

		select {
		case <-ctx.Done():
			return
		case <-wake.C():
			claimNow = true
		case e, ok := <-sub.C():
			if !ok {
				return
			}
			if e.Type == chronos.EventResync {
				claimNow, needNext = true, true
				continue
			}
			skewDelay = skewRetryFirst // news: the next miss starts over
			arm(*e.AvailableAt)
			if e.Count > 1 {
				// A batch: only its earliest time travelled with it.
				needNext = true
			}
		case t := <-d.hints:
			skewDelay = skewRetryFirst
			arm(t)
		case <-d.freed:
			d.startQueued()
			switch {
			case !mayHave:
			case !d.queue.low(d.queue.len()):
				// Enough is queued: the pop that reaches the low water
				// mark wakes this loop again.
			case d.free()+d.queue.room(time.Now()) >= d.batch:
				claimNow = true
			case !batchArmed:
				batchArmed = true
				batchTimer.Reset(claimBatchWait)
			}
		case <-batchTimer.C:
			batchArmed = false
			claimNow = mayHave
		case <-timer.C:
			next = time.Time{}
			claimNow, needNext = true, true
		case <-idle.C:
			claimNow = true
			idle.Reset(r.cfg.IdlePollInterval)
		}
	}
}

// claim claims into every free slot, and into the prefetch queue as much
// as the workers' pace allows (see prefetch), in one statement per round,
// and keeps claiming while claims come back full and there is room. It
// returns how many runs it claimed and whether more may be waiting (the
// last claim was full, or there was no room to claim into).
func (d *dispatcher) claim(ctx context.Context) (claimed int, full bool, err error) {
	r := d.r
	for {
		n := d.free() + d.queue.room(time.Now())
		if n == 0 {
			return claimed, true, nil
		}
		// The claim itself is not cancelled by shutdown: a claim cut off
		// after its commit would leave runs leased with no worker.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
		runs, err := r.db.ClaimAhead(cctx, r.cfg.Instance, n, r.cfg.LeaseDuration, r.cfg.ClaimAhead)
		cancel()
		if err != nil {
			r.log.Error("claim runs failed", "err", err)
			return claimed, false, err
		}
		// Into the queue, behind what waits already, and from there to
		// every free worker: runs start in claim order.
		d.queue.push(time.Now(), runs, groupAhead(runs))
		d.startQueued()
		claimed += len(runs)
		if len(runs) > 0 {
			r.log.Debug("claimed runs", "count", len(runs))
			r.bus.Publish(chronos.Event{Type: chronos.EventClaimed, Instance: r.cfg.Instance, Count: len(runs)})
		}
		if len(runs) < n || ctx.Err() != nil {
			return claimed, len(runs) == n, nil
		}
		if d.free() == 0 && !d.queue.low(d.queue.len()) {
			// More may wait, and enough is queued: a claim now would
			// be a small one, a commit for a handful of runs. The pop
			// that reaches the low water mark asks for the next.
			return claimed, true, nil
		}
	}
}

// startQueued hands queued runs to free workers until either runs out.
func (d *dispatcher) startQueued() {
	for {
		select {
		case <-d.slots:
		default:
			return
		}
		q, ok, expired, _ := d.queue.pop(time.Now())
		d.handBack(expired)
		if !ok {
			d.slots <- struct{}{} // not taken after all
			return
		}
		d.pool.Go(func() { d.work(q) })
	}
}

// work delivers q, then queued runs while there are any, and gives its
// slot back.
func (d *dispatcher) work(q queuedRun) {
	defer d.release()
	for {
		d.r.deliver(q.c, q.ahead)
		d.queue.finished.Add(1)
		next, ok, expired, low := d.queue.pop(time.Now())
		d.handBack(expired)
		if low {
			d.wake()
		}
		if !ok {
			return
		}
		q = next
	}
}

// handBack releases queued runs that will not be sent (they waited too
// long, or claiming stopped): back to pending, their attempt uncounted,
// in one statement. The release runs beside the caller (wait waits for
// it): it is bounded by dbWriteTimeout, and a database that answers
// slowly must neither hold up a worker or the dispatcher nor delay a
// stop, where it overlaps the grace of the deliveries in flight.
func (d *dispatcher) handBack(runs []queuedRun) {
	if len(runs) == 0 {
		return
	}
	cs := make([]sql.Claimed, len(runs))
	for i, q := range runs {
		cs[i] = q.c
	}
	d.handing.Go(func() { d.r.releaseQueued(cs) })
}

// stopQueue stops workers taking queued runs and hands those runs back.
func (d *dispatcher) stopQueue() { d.handBack(d.queue.stop()) }

// release gives a worker slot back and tells the dispatcher.
func (d *dispatcher) release() {
	d.slots <- struct{}{}
	d.wake()
}

// wake tells the dispatcher a slot was freed or the queue ran low.
func (d *dispatcher) wake() {
	select {
	case d.freed <- struct{}{}:
	default:
	}
}

func (d *dispatcher) nextAvailable(ctx context.Context) (*time.Time, error) {
	cctx, cancel := context.WithTimeout(ctx, claimTimeout)
	defer cancel()
	t, err := d.r.db.NextAvailable(cctx)
	if err != nil && ctx.Err() == nil {
		d.r.log.Error("next available run failed", "err", err)
	}
	return t, err
}

// wait waits for every delivery handed to the pool, and for the releases
// of the queued runs handed back.
func (d *dispatcher) wait() {
	d.pool.Wait()
	d.handing.Wait()
}

// disarmedTimer is a timer that is not running: a loop arms it with Reset
// once it knows when to wake, and selects on its channel meanwhile.
func disarmedTimer() *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}
