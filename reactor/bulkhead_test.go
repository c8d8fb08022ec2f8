package reactor

import (
	"testing"
	"time"
)

// fakeClock is a bulkhead's clock that moves only when told.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }
func newFakeClock() *fakeClock           { return &fakeClock{t: time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)} }
func testBulkhead(slots, reserve int) (*bulkhead, *fakeClock) {
	clk := newFakeClock()
	b := newBulkhead(slots, reserve, time.Second)
	b.clock = clk.now
	return b, clk
}

// mustAcquire acquires a call to origin and fails the test when refused.
func mustAcquire(t *testing.T, b *bulkhead, origin string) *bulkCall {
	t.Helper()
	c, ok := b.acquire(origin, true)
	if !ok {
		t.Fatalf("call to %s refused", origin)
	}
	return c
}

// Fast origins fill every slot: the reserve is kept from slow origins
// only.
func TestBulkheadFastOriginsTakeEverySlot(t *testing.T) {
	b, clk := testBulkhead(8, 2)
	for i := range 8 {
		mustAcquire(t, b, []string{"a", "b"}[i%2])
		clk.add(100 * time.Millisecond)
	}
	if n, total := b.inFlight("a"); n != 4 || total != 8 {
		t.Fatalf("in flight a=%d total=%d, want 4 and 8", n, total)
	}
}

// A hanging origin takes the slots outside the reserve, and no more once
// a call of it is a second old; another origin's calls still go, into the
// reserve; the hanging origin's call that ends frees its slot.
func TestBulkheadSlowOriginKeptFromReserve(t *testing.T) {
	b, clk := testBulkhead(8, 2)
	b.release(mustAcquire(t, b, "good")) // another origin is being called
	mustAcquire(t, b, "other")
	var hung []*bulkCall
	for range 5 { // 6 of 8 slots taken: the limit
		hung = append(hung, mustAcquire(t, b, "hang"))
		clk.add(300 * time.Millisecond)
	}
	// The oldest call is 1.5 s old: the origin is slow.
	if _, ok := b.acquire("hang", true); ok {
		t.Fatal("slow origin took a reserved slot")
	}
	// A caller that cannot hand the run back is never refused.
	c, ok := b.acquire("hang", false)
	if !ok {
		t.Fatal("refused though the caller cannot hand the run back")
	}
	b.release(c)
	g1 := mustAcquire(t, b, "good")
	mustAcquire(t, b, "good")
	if _, total := b.inFlight("good"); total != 8 {
		t.Fatalf("total %d, want 8", total)
	}
	b.release(g1)
	// One of the slow origin's calls ends (timed out): it may not take the
	// slot while the total is at the limit...
	b.release(hung[0])
	if _, ok := b.acquire("hang", true); ok {
		t.Fatal("slow origin took a slot with the others holding the limit")
	}
	// ...and may once below it.
	b.release(hung[1])
	mustAcquire(t, b, "hang")
}

// Before any of its calls is slowCall old, an origin is not slow: it may
// take the reserve (a burst to a fast host is not refused).
func TestBulkheadYoungCallsAreNotSlow(t *testing.T) {
	b, clk := testBulkhead(4, 1)
	mustAcquire(t, b, "other")
	for range 3 {
		mustAcquire(t, b, "burst")
		clk.add(100 * time.Millisecond)
	}
	if n, total := b.inFlight("burst"); n != 3 || total != 4 {
		t.Fatalf("in flight burst=%d total=%d, want 3 and 4", n, total)
	}
}

// An origin whose last call was slow is slow from its next call on, until
// a call of it ends sooner; it may always hold one call.
func TestBulkheadLastSlowCallSticks(t *testing.T) {
	b, clk := testBulkhead(4, 1)
	mustAcquire(t, b, "other")
	mustAcquire(t, b, "other")
	c := mustAcquire(t, b, "slow")
	clk.add(2 * time.Second)
	b.release(c) // took 2 s
	mustAcquire(t, b, "other")
	first := mustAcquire(t, b, "slow") // none in flight: it may hold one
	if _, ok := b.acquire("slow", true); ok {
		t.Fatal("origin whose last call was slow took a reserved slot")
	}
	clk.add(10 * time.Millisecond)
	b.release(first) // fast: no longer slow
	mustAcquire(t, b, "slow")
	mustAcquire(t, b, "slow")
}

// A slow origin that is the only one called keeps every slot: there is
// nobody to keep the reserve for, and postponing its runs would only
// cost writes. Once another origin is called, the reserve is kept again
// for othersWindow.
func TestBulkheadSlowOriginAloneTakesEverySlot(t *testing.T) {
	b, clk := testBulkhead(4, 1)
	for range 3 {
		mustAcquire(t, b, "slow")
	}
	clk.add(2 * time.Second)
	mustAcquire(t, b, "slow")
	if n, _ := b.inFlight("slow"); n != 4 {
		t.Fatalf("in flight %d, want 4", n)
	}
	b2, clk2 := testBulkhead(4, 1)
	o := mustAcquire(t, b2, "other")
	b2.release(o)
	for range 2 {
		mustAcquire(t, b2, "slow")
	}
	clk2.add(2 * time.Second)
	mustAcquire(t, b2, "slow") // 3: the limit
	if _, ok := b2.acquire("slow", true); ok {
		t.Fatal("slow origin took the reserve 2 s after another origin's call")
	}
	clk2.add(othersWindow)
	mustAcquire(t, b2, "slow")
}

// Releasing a call twice counts it once.
func TestBulkheadReleaseTwice(t *testing.T) {
	b, _ := testBulkhead(4, 1)
	c := mustAcquire(t, b, "a")
	d := mustAcquire(t, b, "a")
	b.release(c)
	b.release(c)
	if n, total := b.inFlight("a"); n != 1 || total != 1 {
		t.Fatalf("in flight a=%d total=%d, want 1 and 1", n, total)
	}
	b.release(d)
	b.release(nil)
	if n, total := b.inFlight("a"); n != 0 || total != 0 {
		t.Fatalf("in flight a=%d total=%d, want 0 and 0", n, total)
	}
}

// The first refused run of an origin moves the origin's other runs; the
// next ones, for slowCall, go alone, each slowCall after its refusal.
func TestBulkheadPostponement(t *testing.T) {
	b, clk := testBulkhead(4, 1)
	mustAcquire(t, b, "slow")
	if d, others := b.postponement("slow"); d != time.Second || !others {
		t.Fatalf("first postponement %v %v, want 1s and the others moved", d, others)
	}
	clk.add(400 * time.Millisecond)
	if d, others := b.postponement("slow"); d != time.Second || others {
		t.Fatalf("second postponement %v %v, want 1s alone", d, others)
	}
	clk.add(600 * time.Millisecond)
	if d, others := b.postponement("slow"); d != time.Second || !others {
		t.Fatalf("postponement after the first's end %v %v, want 1s and the others moved", d, others)
	}
}

// A negative SlowCall or SlotReserve turns the bulkhead off.
func TestBulkheadOff(t *testing.T) {
	for _, b := range []*bulkhead{newBulkhead(2, -1, time.Second), newBulkhead(2, 1, -1)} {
		clk := newFakeClock()
		b.clock = clk.now
		for range 4 {
			c, ok := b.acquire("x", true)
			if !ok || c != nil {
				t.Fatalf("off bulkhead: acquire = %v %v", c, ok)
			}
			clk.add(2 * time.Second)
		}
	}
}

// Past maxBulkheadOrigins, the origins with no call in flight are
// forgotten; those with calls are kept.
func TestBulkheadForgetsIdleOrigins(t *testing.T) {
	b, _ := testBulkhead(4, 1)
	busy := mustAcquire(t, b, "busy")
	for i := range maxBulkheadOrigins {
		b.release(mustAcquire(t, b, string(rune('a'+i%26))+time.Duration(i).String()))
	}
	if len(b.origins) > maxBulkheadOrigins {
		t.Fatalf("%d origins remembered, want at most %d", len(b.origins), maxBulkheadOrigins)
	}
	if n, _ := b.inFlight("busy"); n != 1 {
		t.Fatalf("busy origin forgotten")
	}
	b.release(busy)
}
