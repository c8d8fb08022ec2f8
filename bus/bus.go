// Package bus is Chronos's in-process publish/subscribe of chronos.Event.
//
// Publishing never blocks: every subscriber has a bounded buffer, and a
// subscriber that falls behind loses events and can learn how many.
// "Work may be ready" wake-ups coalesce: a Wake holds at most one pending
// signal, however many events asked for it.
package bus

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/chronoshq/chronos"
)

// Bus fans events out to subscribers. The zero value is not usable; call New.
type Bus struct {
	mu        sync.RWMutex
	subs      map[*Subscription]struct{}
	wakes     map[*Wake]struct{}
	published atomic.Uint64
	dropped   atomic.Uint64
}

// New returns an empty bus.
func New() *Bus {
	return &Bus{subs: map[*Subscription]struct{}{}, wakes: map[*Wake]struct{}{}}
}

// Publish delivers e to every matching subscriber without blocking. A zero
// Time is set to now.
func (b *Bus) Publish(e chronos.Event) {
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	b.published.Add(1)
	b.mu.RLock()
	defer b.mu.RUnlock()
	for w := range b.wakes {
		if w.filter == nil || w.filter(e) {
			w.Signal()
		}
	}
	for s := range b.subs {
		if s.filter != nil && !s.filter(e) {
			continue
		}
		select {
		case s.c <- e:
		default:
			s.dropped.Add(1)
			s.unreported.Add(1)
			b.dropped.Add(1)
		}
	}
}

// Subscribers is the number of open subscriptions (wakes not counted):
// what a test checks to see that a consumer has gone.
func (b *Bus) Subscribers() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.subs)
}

// Published is the number of events published so far.
func (b *Bus) Published() uint64 { return b.published.Load() }

// Dropped is the number of deliveries lost by slow subscribers so far.
func (b *Bus) Dropped() uint64 { return b.dropped.Load() }

// Subscription receives the events that match its filter.
type Subscription struct {
	bus        *Bus
	c          chan chronos.Event
	filter     func(chronos.Event) bool
	dropped    atomic.Uint64
	unreported atomic.Uint64
	once       sync.Once
}

// Subscribe returns a subscription with room for buffer events (at least 1)
// that receives the events for which filter returns true (all when nil).
// Close it when done.
func (b *Bus) Subscribe(buffer int, filter func(chronos.Event) bool) *Subscription {
	if buffer < 1 {
		buffer = 1
	}
	s := &Subscription{bus: b, c: make(chan chronos.Event, buffer), filter: filter}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

// C is the channel of events; it is closed by Close.
func (s *Subscription) C() <-chan chronos.Event { return s.c }

// Dropped is how many events this subscriber has lost in all.
func (s *Subscription) Dropped() uint64 { return s.dropped.Load() }

// TakeDropped returns how many events were lost since the last call, so a
// consumer can tell its client exactly once.
func (s *Subscription) TakeDropped() uint64 { return s.unreported.Swap(0) }

// TakeGap is TakeDropped as the event an event stream sends its client
// where events went missing: a bus.dropped event of instance with the
// count, stamped now (UTC). ok is false when none were lost since the last
// call. The API's tap and the console's stream send this one frame, so a
// client reads a gap the same way from either.
func (s *Subscription) TakeGap(instance string) (e chronos.Event, ok bool) {
	n := s.TakeDropped()
	if n == 0 {
		return chronos.Event{}, false
	}
	return chronos.Event{Type: chronos.EventDropped, Time: time.Now().UTC(), Instance: instance, Count: int(n)}, true
}

// Close unsubscribes and closes C. It is safe to call more than once.
func (s *Subscription) Close() {
	s.once.Do(func() {
		s.bus.mu.Lock()
		delete(s.bus.subs, s)
		s.bus.mu.Unlock()
		close(s.c)
	})
}

// Wake is a coalescing signal: any number of matching events between two
// receives from C count as one.
type Wake struct {
	bus    *Bus
	c      chan struct{}
	filter func(chronos.Event) bool
	once   sync.Once
}

// SubscribeWake returns a Wake signalled by every event for which filter
// returns true (all when nil). Close it when done.
func (b *Bus) SubscribeWake(filter func(chronos.Event) bool) *Wake {
	w := &Wake{bus: b, c: make(chan struct{}, 1), filter: filter}
	b.mu.Lock()
	b.wakes[w] = struct{}{}
	b.mu.Unlock()
	return w
}

// C receives one value per burst of signals. It is never closed.
func (w *Wake) C() <-chan struct{} { return w.c }

// Signal arms the wake without an event (a timer, a local hint).
func (w *Wake) Signal() {
	select {
	case w.c <- struct{}{}:
	default:
	}
}

// Close unsubscribes the wake.
func (w *Wake) Close() {
	w.once.Do(func() {
		w.bus.mu.Lock()
		delete(w.bus.wakes, w)
		w.bus.mu.Unlock()
	})
}
