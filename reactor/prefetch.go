package reactor

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/chronoshq/chronos/sql"
)

// The prefetch queue (issue 21, "size claim batches by load"): under a
// backlog of quick deliveries a claim takes more runs than there are free
// workers, and the rest wait here for the next worker to finish.
//
// Without it, a claim could take only the slots freed while the previous
// claim was in the database, about forty at a burst's rate; each claim has
// a fixed cost in Postgres of most of a millisecond (the statement's plan
// started and ended, its triggers, its commit), about as much as thirty
// runs' own work, and workers sat idle while it ran. With it, workers that
// finish take the next run from the queue at once, and the dispatcher
// refills the queue before it runs dry, in claims twice as large.
//
// A queued run is leased but not yet being delivered, so the queue is
// kept to what this instance's workers will start within prefetchHorizon
// at the rate they have been finishing deliveries: a few runs when targets
// are slow, none when the instance is idle, so an instance never sits on
// runs another could deliver now. It is refilled when half of that is
// left: a claim under a burst takes 5 to 15 ms on a loaded machine, in
// which the workers start a few hundred runs, so a queue refilled later
// (it held at most one run a worker, refilled at a quarter of that, in
// session 23) ran dry before each claim came back, and the workers waited
// for it. A run that still waited prefetchMaxWait (a lease would have been
// renewed by then) is handed back unsent, uncounted (handBack, one
// ReleaseMany for the lot), and so is every queued run at shutdown.

// prefetchHorizon is how long a queued run is meant to wait, at the
// current rate of finished deliveries.
const prefetchHorizon = 50 * time.Millisecond

// prefetchRateEvery is the shortest window the pace is measured over.
const prefetchRateEvery = 5 * time.Millisecond

// prefetchPerWorker bounds the queue whatever the rate: this many runs a
// worker.
const prefetchPerWorker = 5

// prefetchMaxWait bounds a queued run's wait (also to a quarter of the
// lease): past it the run goes back to pending unsent.
const prefetchMaxWait = time.Second

// queuedRun is a claimed run waiting for a worker.
type queuedRun struct {
	c     sql.Claimed
	ahead *aheadStart
	at    time.Time // claimed
}

// prefetch is the dispatcher's queue of claimed runs and the rate at which
// its workers finish deliveries. Safe for concurrent use.
type prefetch struct {
	most    int           // runs queued at most: prefetchPerWorker a worker
	maxWait time.Duration // see prefetchMaxWait
	// lowWater is how many queued runs are few enough to ask for a
	// refill: half of what room aims at. room sets it, pop reads it.
	lowWater atomic.Int64

	finished atomic.Int64 // deliveries finished, ever

	mu       sync.Mutex
	runs     []queuedRun
	stopping bool

	// The dispatcher's own (one goroutine): the rate of finished
	// deliveries, smoothed over its claims.
	rateAt       time.Time
	rateFinished int64
	rate         float64 // deliveries a second
}

func newPrefetch(workers int, lease time.Duration) *prefetch {
	return &prefetch{
		most:    prefetchPerWorker * workers,
		maxWait: min(prefetchMaxWait, lease/4),
	}
}

// room is how many more runs the queue may take now: what the workers
// finish in prefetchHorizon at their recent rate, less what waits already.
// It sets the low water mark to half of that aim. Only the dispatcher
// calls it.
func (p *prefetch) room(now time.Time) int {
	n := p.finished.Load()
	if dt := now.Sub(p.rateAt); dt >= prefetchRateEvery {
		r := float64(n-p.rateFinished) / dt.Seconds()
		if p.rateAt.IsZero() || dt > time.Second || p.rate == 0 {
			// Nothing recent to smooth with: an idle instance's zero
			// would halve a burst's first reading.
			p.rate = r
		} else {
			p.rate = (p.rate + r) / 2
		}
		p.rateAt, p.rateFinished = now, n
	}
	want := min(p.most, int(p.rate*prefetchHorizon.Seconds()))
	p.lowWater.Store(int64(want / 2))
	return max(0, want-p.len())
}

// len is how many runs wait.
func (p *prefetch) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.runs)
}

// low says n queued runs are few enough to refill the queue.
func (p *prefetch) low(n int) bool { return int64(n) <= p.lowWater.Load() }

// push queues runs claimed at at.
func (p *prefetch) push(at time.Time, runs []sql.Claimed, ahead map[int64]*aheadStart) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range runs {
		p.runs = append(p.runs, queuedRun{c: c, ahead: ahead[c.Run.ID], at: at})
	}
}

// pop takes the oldest queued run, with the runs that waited too long to
// be sent (expired, to hand back) and whether the queue is now at or
// below its low water mark (the dispatcher should think of a refill). ok
// is false when nothing fresh waits, or the dispatcher is stopping.
func (p *prefetch) pop(now time.Time) (q queuedRun, ok bool, expired []queuedRun, low bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopping {
		return q, false, nil, false
	}
	for len(p.runs) > 0 {
		q, p.runs[0] = p.runs[0], queuedRun{}
		p.runs = p.runs[1:]
		if now.Sub(q.at) > p.maxWait {
			expired = append(expired, q)
			continue
		}
		return q, true, expired, p.low(len(p.runs))
	}
	return q, false, expired, false
}

// stop makes every later pop come back empty and returns what waited.
func (p *prefetch) stop() []queuedRun {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopping = true
	runs := p.runs
	p.runs = nil
	return runs
}
