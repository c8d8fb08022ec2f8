package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronoshq/chronos/bus"
	"github.com/chronoshq/chronos/reactor"
	"github.com/chronoshq/chronos/reactor/reactortest"
	"github.com/chronoshq/chronos/sql"
)

// TestTicket13: shutdown racing the leader ticker. Whatever the
// interleaving of a leader tick and shutdown, the advisory lock is released,
// and leader work never runs without the lock.
//
// Each iteration runs two Leaders on one database with a short poll (so
// their tickers fire constantly) and cancels each after an independent
// random delay: before it connects, while it connects or tries the lock,
// just after it wins, or in the middle of a work tick. The work ticks
// (a query on the pool, a short pause) and, once cancelled, finishes its
// tick and checks from another connection that the lock is still its own:
// an implementation that unlocks before the work has returned fails here.
// After both have returned, the lock must be free: one that loses track of
// the lock when cancelled mid-TryLock fails there.
func TestTicket13(t *testing.T) {
	dsn := parallelDSN(t)
	obs := reactortest.OpenWarmDB(t, dsn, "t13-observer")
	// 60 iterations, unless the machine is so loaded that they would take
	// more than budget: then at least minIterations.
	const (
		iterations    = 60
		minIterations = 25
		budget        = 20 * time.Second
	)
	began := time.Now()

	// Calibrate the cancel delays on how long one Leader takes to lead
	// here (connect + TryLock; much longer under -race), so that they land
	// before, during and after acquisition. The slowest of three samples:
	// one fast sample on a loaded machine drew delays that ended nearly
	// every leader before it could lead.
	acquire := max(ldrTimeToLead(t, dsn, obs), ldrTimeToLead(t, dsn, obs), ldrTimeToLead(t, dsn, obs))
	maxDelay := 2*acquire + 10*time.Millisecond
	t.Logf("time to lead: %v; cancel delays drawn from [0, %v)", acquire.Round(time.Microsecond), maxDelay.Round(time.Microsecond))

	var acquisitions atomic.Int32
	done := 0
	for i := range iterations {
		if i >= minIterations && time.Since(began) > budget {
			break
		}
		done++
		before := acquisitions.Load()
		var (
			running atomic.Int32 // leader works running at once
			wg      sync.WaitGroup
		)
		names := []string{fmt.Sprintf("t13-%d-a", i), fmt.Sprintf("t13-%d-b", i)}
		leaders := make([]*reactor.Leader, len(names))
		for k, name := range names {
			poll := time.Duration(4+rand.IntN(8)) * time.Millisecond
			l := reactor.NewLeader(reactor.LeaderConfig{DSN: dsn, Instance: name, PollInterval: poll}, obs, bus.New(), reactortest.Logger(t))
			leaders[k] = l
			work := func(ctx context.Context) {
				acquisitions.Add(1)
				if n := running.Add(1); n > 1 {
					t.Errorf("iteration %d: %d leader works at once", i, n)
				}
				defer running.Add(-1)
				if !l.IsLeader() {
					// IsLeader turns true only once the work is started,
					// so it may lag by an instant here; the check that
					// matters is the one from another connection.
					ldrWaitQuiet(5*time.Second, l.IsLeader)
				}
				for ctx.Err() == nil { // a tick
					wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
					if _, err := obs.Pool.Exec(wctx, "SELECT 1"); err != nil {
						t.Errorf("iteration %d: tick query: %v", i, err)
					}
					cancel()
					select {
					case <-ctx.Done():
					case <-time.After(time.Duration(rand.IntN(2000)) * time.Microsecond):
					}
				}
				// Finishing the tick after shutdown began: the lock must
				// still be held while the work runs.
				time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
				if h := reactortest.LockHolder(t, obs); h != name {
					t.Errorf("iteration %d: %s's work still running but the lock is held by %q", i, name, h)
				}
				if !l.IsLeader() {
					t.Errorf("iteration %d: %s: IsLeader false while its work runs", i, name)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			delay := time.Duration(rand.Int64N(int64(maxDelay)))
			wg.Add(2)
			go func() {
				defer wg.Done()
				if err := l.Run(ctx, work); err != nil {
					t.Errorf("iteration %d: %s: Run = %v", i, name, err)
				}
			}()
			go func() {
				defer wg.Done()
				time.Sleep(delay)
				cancel()
			}()
		}
		wg.Wait()
		if running.Load() != 0 {
			t.Fatalf("iteration %d: leader work still running after Run returned", i)
		}
		for k, l := range leaders {
			if l.IsLeader() {
				t.Errorf("iteration %d: %s still says it leads after Run returned", i, names[k])
			}
		}
		// Both Runs have returned: the lock must be free (allowing the
		// server a moment to finish a backend whose client hung up).
		free := ldrWaitQuiet(10*time.Second, func() bool { return reactortest.LockHolder(t, obs) == "" })
		if !free {
			t.Fatalf("iteration %d: the advisory lock is still held by %q after both leaders stopped", i, reactortest.LockHolder(t, obs))
		}
		if t.Failed() {
			t.FailNow()
		}
		// The time to lead drifts with the machine's load: when neither
		// leader got to lead, the delays were too short for this moment,
		// so lengthen them (the race with acquisition is what is tested).
		if acquisitions.Load() == before {
			maxDelay += maxDelay / 4
		}
	}
	t.Logf("%d iterations, %d leaders: %d acquisitions, in %v (delays up to %v at the end)", done, 2*done, acquisitions.Load(), time.Since(began).Round(time.Millisecond), maxDelay.Round(time.Microsecond))
	if int(acquisitions.Load()) < done/8 {
		t.Fatalf("the lock was acquired only %d times: shutdown hardly ever raced leadership", acquisitions.Load())
	}
}

// ldrTimeToLead measures how long a fresh Leader takes to lead (the
// median of three), and checks the lock is free afterwards.
func ldrTimeToLead(t *testing.T, dsn string, obs *sql.DB) time.Duration {
	t.Helper()
	var ds []time.Duration
	for k := range 3 {
		led := make(chan time.Time, 1)
		l := reactor.NewLeader(reactor.LeaderConfig{DSN: dsn, Instance: fmt.Sprintf("t13-calibrate-%d", k), PollInterval: 5 * time.Millisecond}, obs, bus.New(), reactortest.Logger(t))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		start := time.Now()
		go func() {
			done <- l.Run(ctx, func(ctx context.Context) {
				led <- time.Now()
				<-ctx.Done()
			})
		}()
		select {
		case at := <-led:
			ds = append(ds, at.Sub(start))
		case <-time.After(10 * time.Second):
			t.Fatalf("calibration: no leadership within 10s")
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("calibration: Run = %v", err)
		}
	}
	slices.Sort(ds)
	if h := reactortest.LockHolder(t, obs); h != "" {
		t.Fatalf("calibration: lock still held by %q", h)
	}
	return ds[1]
}

// ldrWaitQuiet polls cond every millisecond for up to d and reports
// whether it came to hold.
func ldrWaitQuiet(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}
