package reactor

import (
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/reactor/reactortest"
)

// A host that hangs holds the instance's slots outside the reserve and no
// more: the runs of another host triggered meanwhile are delivered at
// once, not after the hanging calls' timeout; the hanging host's runs
// past its share wait (postponed, not counted as attempts) and are all
// delivered, once each, when it answers again. The breaker is off, so
// the bulkhead alone does it.
func TestBulkheadHangingHostDoesNotStarveAnother(t *testing.T) {
	dsn := parallelDSN(t)
	bad, release := newHangingTarget(t)
	good := newTarget(t, nil)
	const (
		slots    = 4 // limit 3: a reserve of 1
		slowCall = 200 * time.Millisecond
	)
	in := startReactor(t, dsn, Config{WorkerConcurrency: slots,
		Hosts: HostConfig{BreakerFailures: -1, SlowCall: slowCall, SlotReserve: 1}})
	startListener(t, dsn, in.Name, in.bus)

	badJob := createJob(t, in.db, &chronos.Job{TargetURL: bad.URL, TimeoutSeconds: 60})
	goodJob := createJob(t, in.db, &chronos.Job{TargetURL: good.URL})
	// Another host is being called, and a call of the bad host is in
	// flight long enough for the host to be slow.
	goodRuns := []int64{in.trigger(t, goodJob.ID).ID}
	reactortest.WaitTerminal(t, in.db, goodRuns[0], 30*time.Second)
	badRuns := []int64{in.trigger(t, badJob.ID).ID}
	eventually(t, 30*time.Second, "the bad host is slow", func() bool {
		a := bad.Arrivals()
		return len(a) == 1 && time.Since(a[0]) > 2*slowCall
	})
	// More runs of the bad host than there are slots: it takes the limit.
	for range 2 * slots {
		badRuns = append(badRuns, in.trigger(t, badJob.ID).ID)
	}
	eventually(t, 30*time.Second, "the bad host holds its share", func() bool {
		return bad.inFlight.Load() == slots-1
	})
	// The other host's runs go at once, one after another, through the
	// reserve.
	for range 3 {
		t0 := time.Now()
		id := in.trigger(t, goodJob.ID).ID
		goodRuns = append(goodRuns, id)
		r := reactortest.WaitTerminal(t, in.db, id, 30*time.Second)
		if r.Status != chronos.StatusSucceeded {
			t.Fatalf("run %d of the good host: %s", id, r.Status)
		}
		// The hanging calls' timeout is 60 s; 10 s is a wide bound for
		// a delivery that does not wait for them.
		if d := time.Since(t0); d > 10*time.Second {
			t.Errorf("run %d of the good host took %v: it waited for a slot", id, d)
		}
	}
	if n := bad.maxSeen.Load(); n > slots-1 {
		t.Errorf("the bad host had %d calls in flight at once, want at most %d", n, slots-1)
	}
	// The bad host answers again: every run of it is delivered, with one
	// attempt (waiting for a slot was not one).
	release()
	for _, id := range append(badRuns, goodRuns...) {
		r := reactortest.WaitTerminal(t, in.db, id, 30*time.Second)
		if r.Status != chronos.StatusSucceeded || r.AttemptCount != 1 {
			t.Errorf("run %d: %s after %d attempts, want succeeded after 1", id, r.Status, r.AttemptCount)
		}
	}
	if n := bad.hits.Load(); n != int64(len(badRuns)) {
		t.Errorf("the bad host got %d requests, want %d (one per run)", n, len(badRuns))
	}
}
