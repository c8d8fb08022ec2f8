package bus

import (
	"sync"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSubscriberReceivesMatchingEvents(t *testing.T) {
	b := New()
	s := b.Subscribe(8, func(e chronos.Event) bool { return e.JobID == 7 })
	defer s.Close()
	b.Publish(chronos.Event{Type: chronos.EventJobChanged, JobID: 1})
	b.Publish(chronos.Event{Type: chronos.EventJobChanged, JobID: 7})
	select {
	case e := <-s.C():
		if e.JobID != 7 || e.Time.IsZero() {
			t.Fatalf("got %+v, want job 7 with a time", e)
		}
	case <-time.After(time.Second):
		t.Fatal("no event")
	}
	select {
	case e := <-s.C():
		t.Fatalf("unexpected event %+v", e)
	default:
	}
}

// A subscriber that does not read must never block the publisher; it loses
// events and can learn how many, exactly once.
func TestSlowSubscriberDropsWithoutBlocking(t *testing.T) {
	b := New()
	s := b.Subscribe(2, nil)
	defer s.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 1000 {
			b.Publish(chronos.Event{Type: chronos.EventClaimed, Count: 1})
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Publish blocked on a full subscriber")
	}
	if got := s.Dropped(); got != 998 {
		t.Fatalf("Dropped = %d, want 998", got)
	}
	if got := s.TakeDropped(); got != 998 {
		t.Fatalf("TakeDropped = %d, want 998", got)
	}
	if got := s.TakeDropped(); got != 0 {
		t.Fatalf("second TakeDropped = %d, want 0", got)
	}
	if b.Dropped() != 998 || b.Published() != 1000 {
		t.Fatalf("bus counters = %d dropped, %d published", b.Dropped(), b.Published())
	}
}

// TakeGap reports the events a subscriber lost once, as the bus.dropped
// event a stream sends its client, and nothing when none were lost.
func TestTakeGapReportsLostEventsOnce(t *testing.T) {
	b := New()
	s := b.Subscribe(1, nil)
	defer s.Close()
	if _, ok := s.TakeGap("i1"); ok {
		t.Fatal("a gap before any event was lost")
	}
	for range 4 {
		b.Publish(chronos.Event{Type: chronos.EventClaimed})
	}
	before := time.Now()
	gap, ok := s.TakeGap("i1")
	if !ok || gap.Type != chronos.EventDropped || gap.Instance != "i1" || gap.Count != 3 ||
		gap.Time.Location() != time.UTC || gap.Time.Before(before.Add(-time.Second)) {
		t.Fatalf("TakeGap = %+v, %v; want bus.dropped of i1, count 3, now in UTC", gap, ok)
	}
	if _, ok := s.TakeGap("i1"); ok {
		t.Fatal("the same gap was reported twice")
	}
}

// Wake-ups coalesce: a burst of events is one signal, not a queue.
func TestWakeCoalesces(t *testing.T) {
	b := New()
	w := b.SubscribeWake(chronos.Event.WakesDispatcher)
	defer w.Close()
	for range 100 {
		b.Publish(chronos.Event{Type: chronos.EventRunChanged, Status: chronos.StatusPending})
	}
	b.Publish(chronos.Event{Type: chronos.EventRunChanged, Status: chronos.StatusSucceeded})
	select {
	case <-w.C():
	case <-time.After(time.Second):
		t.Fatal("no wake-up")
	}
	noWake(t, w, "a burst gave more than one wake-up")
	b.Publish(chronos.Event{Type: chronos.EventRunChanged, Status: chronos.StatusSucceeded})
	noWake(t, w, "a non-matching event woke")
}

func TestCloseUnsubscribes(t *testing.T) {
	b := New()
	s := b.Subscribe(1, nil)
	w := b.SubscribeWake(nil)
	s.Close()
	s.Close() // idempotent
	w.Close()
	b.Publish(chronos.Event{Type: chronos.EventResync})
	if _, ok := <-s.C(); ok {
		t.Fatal("closed subscription delivered an event")
	}
	noWake(t, w, "closed wake was signalled")
}

// Publishing, subscribing and closing from many goroutines is race-free.
func TestConcurrentUse(t *testing.T) {
	b := New()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range 200 {
				b.Publish(chronos.Event{Type: chronos.EventResync})
			}
		}()
		go func() {
			defer wg.Done()
			for range 50 {
				s := b.Subscribe(4, nil)
				w := b.SubscribeWake(nil)
				s.Close()
				w.Close()
			}
		}()
	}
	wg.Wait()
}

// noWake fails the test with msg when w has been signalled.
func noWake(t *testing.T, w *Wake, msg string) {
	t.Helper()
	select {
	case <-w.C():
		t.Fatal(msg)
	default:
	}
}
