package reactor

import (
	"sync"
	"time"
)

// The bulkhead keeps one slow origin from holding every worker slot of an
// instance (issue 24, section 2: one bad host must not slow the others).
//
// Until its breaker opens, a host that hangs holds a slot for each of its
// runs for the job's whole timeout, and the runs of every other host wait
// for a slot. So an origin counts as slow while a call to it has been in
// flight for SlowCall or more, or its last call took that long; a slow
// origin may not take the last SlotReserve slots of the instance (a
// quarter by default) while other origins are being called (one was in
// the last othersWindow). A run of a slow origin claimed past that is
// handed back uncounted, due SlowCall later (sql.Postpone, which moves the
// origin's other due runs along with it, so that the claim does not hand
// them over one by one). The runs of the other origins always find the
// reserve free, however many origins are slow; a slow origin keeps three
// quarters of the slots, all of them when it is the only origin called,
// and any origin may always hold one call.
//
// It is per instance and in memory: it is about this instance's slots,
// not about the host (which is the breaker's business, shared by the
// cluster). Deciding costs a map lookup under a mutex per delivery; the
// calls of an origin are looked at only when the slots outside the
// reserve are all taken.

// Bulkhead defaults (HostConfig).
const (
	DefaultSlowCall = time.Second
	// The reserve is WorkerConcurrency/defaultReserveDivisor slots, at
	// least one.
	defaultReserveDivisor = 4
)

// othersWindow: the reserve is kept from a slow origin while another
// origin had a call start this recently. An instance that calls one
// origin only (a slow one, with a backlog) keeps all its slots for it:
// postponing its runs would only cost writes.
const othersWindow = time.Minute

// maxBulkheadOrigins bounds the origins the bulkhead remembers while no
// call of theirs is in flight: past it they are forgotten, which only
// lets a slow one's next calls start unhindered until one of them is
// found slow.
const maxBulkheadOrigins = 4096

// bulkhead counts the calls in flight per origin. Safe for concurrent use.
type bulkhead struct {
	limit    int           // calls in flight past which a slow origin takes no slot: slots - reserve
	slowCall time.Duration // a call this old makes its origin slow; <= 0: the bulkhead is off
	clock    func() time.Time

	mu      sync.Mutex
	total   int // calls in flight
	origins map[string]*originLoad
	// recent are the last two distinct origins a call started for, the
	// latest first, and when: the latest call of an origin other than o
	// is recent[0]'s, or recent[1]'s when recent[0] is o.
	recent [2]originStart
}

// originStart is when a call to origin last started.
type originStart struct {
	origin string
	at     time.Time
}

// originLoad is one origin's calls in flight.
type originLoad struct {
	calls    []*bulkCall // in no particular order
	lastSlow bool        // the last call to end took slowCall or longer
	// movedUntil: the origin's due runs were moved to this instant by
	// this instance, a moment ago (see postponement).
	movedUntil time.Time
}

// bulkCall is one call in flight, as acquire handed it out.
type bulkCall struct {
	origin string
	start  time.Time
	i      int // index in its originLoad's calls
}

// newBulkhead returns the bulkhead of an instance with slots worker slots
// of which reserve are kept from slow origins; slowCall <= 0 or reserve < 0
// turns it off.
func newBulkhead(slots, reserve int, slowCall time.Duration) *bulkhead {
	if reserve < 0 {
		slowCall = 0
	}
	return &bulkhead{limit: max(slots-reserve, 1), slowCall: slowCall, clock: time.Now, origins: map[string]*originLoad{}}
}

// acquire counts a call to origin starting now. It is false when the
// origin is slow and the slots outside the reserve are all taken (and
// mayRefuse: the caller can hand the run back): then the call must not
// start. The call it returns (nil when the bulkhead is off) goes to
// release when the call ends.
func (b *bulkhead) acquire(origin string, mayRefuse bool) (*bulkCall, bool) {
	if b.slowCall <= 0 {
		return nil, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock()
	o := b.origins[origin]
	if o == nil {
		if len(b.origins) >= maxBulkheadOrigins {
			b.forgetIdle()
		}
		o = &originLoad{}
		b.origins[origin] = o
	}
	if mayRefuse && b.total >= b.limit && len(o.calls) > 0 && b.othersActive(origin, now) && b.slow(o, now) {
		return nil, false
	}
	if b.recent[0].origin != origin {
		b.recent[1] = b.recent[0]
	}
	b.recent[0] = originStart{origin: origin, at: now}
	c := &bulkCall{origin: origin, start: now, i: len(o.calls)}
	o.calls = append(o.calls, c)
	b.total++
	return c, true
}

// othersActive reports whether a call to an origin other than origin
// started within othersWindow of now. Called with b.mu held.
func (b *bulkhead) othersActive(origin string, now time.Time) bool {
	other := b.recent[0]
	if other.origin == origin {
		other = b.recent[1]
	}
	return !other.at.IsZero() && now.Sub(other.at) < othersWindow
}

// slow reports whether o is slow at now. Called with b.mu held.
func (b *bulkhead) slow(o *originLoad, now time.Time) bool {
	if o.lastSlow {
		return true
	}
	for _, c := range o.calls {
		if now.Sub(c.start) >= b.slowCall {
			return true
		}
	}
	return false
}

// release ends a call acquire counted, now. Releasing it again does
// nothing.
func (b *bulkhead) release(c *bulkCall) {
	if c == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	o := b.origins[c.origin]
	if o == nil || c.i >= len(o.calls) || o.calls[c.i] != c {
		return // released already (and maybe forgotten since)
	}
	now := b.clock()
	last := len(o.calls) - 1
	o.calls[c.i] = o.calls[last]
	o.calls[c.i].i = c.i
	o.calls[last] = nil
	o.calls = o.calls[:last]
	b.total--
	o.lastSlow = now.Sub(c.start) >= b.slowCall
	// The origin is remembered after its last call (forgetIdle bounds
	// how many are): it is called again soon, as a rule.
}

// postponement says how a run of origin that acquire refused is handed
// back: due slowCall from now, with the origin's other due runs moved
// along (others) unless this instance moved them less than slowCall ago.
// Each refused run comes back slowCall after its refusal, so they come
// back as they came, not all at one instant (a burst of refusals, each a
// transaction, would hold the reserved slots for a moment).
func (b *bulkhead) postponement(origin string) (delay time.Duration, others bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock()
	o := b.origins[origin]
	if o == nil {
		return b.slowCall, true
	}
	if now.Before(o.movedUntil) {
		return b.slowCall, false
	}
	o.movedUntil = now.Add(b.slowCall)
	return b.slowCall, true
}

// inFlight is how many calls to origin are counted, and in total.
func (b *bulkhead) inFlight(origin string) (n, total int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if o := b.origins[origin]; o != nil {
		n = len(o.calls)
	}
	return n, b.total
}

// forgetIdle drops the origins with no call in flight. Called with b.mu
// held.
func (b *bulkhead) forgetIdle() {
	for k, o := range b.origins {
		if len(o.calls) == 0 {
			delete(b.origins, k)
		}
	}
}
