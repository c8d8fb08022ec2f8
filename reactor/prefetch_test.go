package reactor

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/reactor/reactortest"
	"github.com/chronoshq/chronos/sql"
)

// queuedRuns makes n claimed runs with ids from first, for the queue's
// unit tests.
func queuedRuns(first int64, n int) []sql.Claimed {
	runs := make([]sql.Claimed, n)
	for i := range runs {
		runs[i] = sql.Claimed{Run: &chronos.Run{ID: first + int64(i)}}
	}
	return runs
}

// The queue takes what the workers finish in prefetchHorizon at their
// recent pace: nothing while they finish nothing, never more than
// prefetchPerWorker runs a worker, and less what already waits; it asks
// for a refill when half of that aim is left.
func TestPrefetchRoomFollowsThePace(t *testing.T) {
	t.Parallel()
	p := newPrefetch(100, 30*time.Second)
	t0 := time.Now()
	if n := p.room(t0); n != 0 {
		t.Fatalf("nothing finished yet: room %d, want 0", n)
	}
	// 900 deliveries every 100 ms: 9,000 a second, 450 in the horizon.
	// The pace is smoothed, so it gets there over a few windows.
	var n int
	at := t0
	for range 10 {
		p.finished.Add(900)
		at = at.Add(100 * time.Millisecond)
		n = p.room(at)
	}
	if n < 445 || n > 450 {
		t.Fatalf("at 9,000 deliveries a second: room %d, want 450", n)
	}
	if !p.low(n/2) || p.low(n/2+2) {
		t.Fatalf("aiming at %d runs: low water %d, want half", n, p.lowWater.Load())
	}
	p.push(t0, queuedRuns(1, 40), nil)
	if m := p.room(at.Add(time.Millisecond)); m != n-40 {
		t.Fatalf("40 queued: room %d, want %d", m, n-40)
	}
	// A hundred times the pace: capped at prefetchPerWorker a worker.
	p.finished.Add(90000)
	if m := p.room(at.Add(100 * time.Millisecond)); m != 500-40 {
		t.Fatalf("at 900,000 a second with 40 queued: room %d, want 500-40", m)
	}
	// Slow targets: 100 deliveries a second, five runs in the horizon.
	slow := newPrefetch(100, 30*time.Second)
	slow.room(t0)
	slow.finished.Add(200)
	if n := slow.room(t0.Add(2 * time.Second)); n != 5 {
		t.Fatalf("at 100 a second: room %d, want 5", n)
	}
	// Idle for a while: nothing.
	if n := slow.room(t0.Add(10 * time.Second)); n != 0 {
		t.Fatalf("idle: room %d, want 0", n)
	}
}

// Runs leave the queue in the order they came; a run that waited past
// prefetchMaxWait comes out to be handed back, never to be sent; the pop
// that leaves the low water mark says so.
func TestPrefetchPopsInOrderAndHandsBackTheStale(t *testing.T) {
	t.Parallel()
	p := newPrefetch(8, 30*time.Second)
	p.lowWater.Store(2) // as room sets it when it aims at 4 runs
	t0 := time.Now()
	p.push(t0, queuedRuns(1, 2), nil)
	p.push(t0.Add(p.maxWait), queuedRuns(3, 4), nil)

	now := t0.Add(p.maxWait + time.Millisecond)
	q, ok, expired, low := p.pop(now)
	if !ok || q.c.Run.ID != 3 || len(expired) != 2 || expired[0].c.Run.ID != 1 || expired[1].c.Run.ID != 2 || low {
		t.Fatalf("pop: run %v ok %v, expired %d, low %v; want run 3, runs 1 and 2 expired, not low", q.c.Run, ok, len(expired), low)
	}
	if q, ok, _, low := p.pop(now); !ok || q.c.Run.ID != 4 || !low {
		t.Fatalf("second pop: run %v ok %v low %v; want run 4, at the low water mark", q.c.Run, ok, low)
	}
	if _, ok, expired, _ := p.pop(now.Add(p.maxWait)); ok || len(expired) != 2 {
		t.Fatalf("after a long wait: ok %v, %d expired; want nothing to send, 2 to hand back", ok, len(expired))
	}
}

// Stopping empties the queue into the caller's hands, and no worker takes
// a queued run after that.
func TestPrefetchStopEmptiesTheQueue(t *testing.T) {
	t.Parallel()
	p := newPrefetch(8, 30*time.Second)
	p.push(time.Now(), queuedRuns(1, 3), nil)
	if left := p.stop(); len(left) != 3 {
		t.Fatalf("stop returned %d runs, want 3", len(left))
	}
	p.push(time.Now(), queuedRuns(4, 1), nil)
	if _, ok, _, _ := p.pop(time.Now()); ok {
		t.Fatal("a run was popped after stop")
	}
}

// Under a backlog of quick deliveries a claim takes more runs than there
// are workers, the queue feeding them as they finish, and still no more
// calls are in flight than WorkerConcurrency and every run is delivered
// once. Without the queue no claim took more than the free workers.
func TestBacklogClaimsPastTheWorkers(t *testing.T) {
	dsn := parallelDSN(t)
	tg := newTarget(t, nil)
	seed := reactortest.OpenDB(t, dsn, "seed")
	job := createJob(t, seed, &chronos.Job{TargetURL: tg.URL})
	const n, workers = 400, 4
	for range n {
		if _, err := seed.Trigger(t.Context(), job.ID); err != nil {
			t.Fatal(err)
		}
	}
	var largest atomic.Int64
	in := startReactor(t, dsn, Config{WorkerConcurrency: workers}, func(r *Reactor) {
		sub := r.bus.Subscribe(1024, func(e chronos.Event) bool { return e.Type == chronos.EventClaimed })
		t.Cleanup(sub.Close)
		go func() {
			for e := range sub.C() {
				if int64(e.Count) > largest.Load() {
					largest.Store(int64(e.Count))
				}
			}
		}()
	})
	eventually(t, 60*time.Second, "every run delivered", func() bool { return tg.hits.Load() >= n })
	if err := in.stop(); err != nil {
		t.Fatal(err)
	}
	if m := tg.maxSeen.Load(); m > workers {
		t.Errorf("the target saw %d calls in flight; WorkerConcurrency is %d", m, workers)
	}
	if l := largest.Load(); l <= workers {
		t.Errorf("the largest claim took %d runs; under a backlog of quick deliveries it should take more than the %d workers", l, workers)
	}
	if h := tg.hits.Load(); h != n {
		t.Errorf("the target was called %d times for %d runs", h, n)
	}
	var succeeded int
	if err := seed.Pool.QueryRow(t.Context(),
		`SELECT count(*) FROM job_runs WHERE job_id = $1 AND status = 'succeeded' AND attempt_count = 1`, job.ID).Scan(&succeeded); err != nil {
		t.Fatal(err)
	}
	if succeeded != n {
		t.Errorf("%d of %d runs succeeded at their first attempt", succeeded, n)
	}
}

// Runs still queued when the instance stops were never sent: they go
// back to pending as soon as claiming stops, while the deliveries in
// flight still have their grace (so another instance can take them at
// once), their attempt uncounted and with no row.
func TestShutdownHandsBackQueuedRuns(t *testing.T) {
	dsn := parallelDSN(t)
	tg, release := newHangingTarget(t)
	in := startReactor(t, dsn, Config{WorkerConcurrency: 1, ShutdownTimeout: time.Minute})
	job := createJob(t, in.db, &chronos.Job{TargetURL: tg.URL, MaxRetries: 0})
	held := in.trigger(t, job.ID)
	eventually(t, 10*time.Second, "the one worker held by the target", func() bool { return tg.inFlight.Load() == 1 })

	// Three more runs, claimed as the dispatcher would under a backlog,
	// wait in the queue behind the held worker.
	var queued []int64
	for range 3 {
		queued = append(queued, in.TriggerSilently(t, job.ID).ID)
	}
	runs, err := in.db.Claim(t.Context(), in.r.cfg.Instance, 3, in.r.cfg.LeaseDuration)
	if err != nil || len(runs) != 3 {
		t.Fatalf("claim: %d runs, %v", len(runs), err)
	}
	in.r.disp.queue.push(time.Now(), runs, nil)

	stopped := make(chan error, 1)
	go func() { stopped <- in.stop() }()
	eventually(t, 10*time.Second, "the queued runs handed back during the grace", func() bool {
		for _, id := range queued {
			if r := runOf(t, in.db, id); r.Status != chronos.StatusPending || r.LeasedBy != nil {
				return false
			}
		}
		return true
	})
	if tg.inFlight.Load() != 1 {
		t.Fatal("the held delivery ended before the queued runs were handed back")
	}
	release()
	if err := <-stopped; err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, id := range queued {
		full, err := in.db.Run(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if full.Status != chronos.StatusPending || full.AttemptCount != 0 || len(full.Attempts) != 0 || full.LeasedBy != nil {
			t.Errorf("queued run %d is %s with %d attempts (%d rows), leased by %v; want pending, uncounted, free",
				id, full.Status, full.AttemptCount, len(full.Attempts), full.LeasedBy)
		}
	}
	if h := tg.hits.Load(); h != 1 {
		t.Errorf("the target was called %d times; only run %d was ever sent", h, held.ID)
	}
}

// A queued run that waited past prefetchMaxWait is not sent under its old
// claim: it goes back to pending and is delivered under a claim of its
// own (the attempt's worker is this instance, not the stale claimer).
func TestStaleQueuedRunIsHandedBackNotSent(t *testing.T) {
	dsn := parallelDSN(t)
	tg := newTarget(t, nil)
	seed := reactortest.OpenDB(t, dsn, "seed")
	job := createJob(t, seed, &chronos.Job{TargetURL: tg.URL, MaxRetries: 0})
	stale, err := seed.Trigger(t.Context(), job.ID)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := seed.Claim(t.Context(), "stale-claimer", 1, 30*time.Second)
	if err != nil || len(runs) != 1 {
		t.Fatalf("claim: %d runs, %v", len(runs), err)
	}
	// Queued long ago, before the reactor's first claim pops the queue.
	in := startReactor(t, dsn, Config{WorkerConcurrency: 1}, func(r *Reactor) {
		r.disp.queue.push(time.Now().Add(-2*prefetchMaxWait), runs, nil)
	})
	fresh := in.trigger(t, job.ID)
	for _, id := range []int64{stale.ID, fresh.ID} {
		run := reactortest.WaitTerminal(t, in.db, id, 20*time.Second)
		if run.Status != chronos.StatusSucceeded || run.AttemptCount != 1 || len(run.Attempts) != 1 {
			t.Fatalf("run %d: %s with %d attempts (%d rows), want succeeded at the first", id, run.Status, run.AttemptCount, len(run.Attempts))
		}
		if w := run.Attempts[0].WorkerID; w != in.r.cfg.Instance {
			t.Errorf("run %d was delivered by %q, want this instance (%q): a stale claim was sent", id, w, in.r.cfg.Instance)
		}
	}
	if c := tg.hits.Load(); c != 2 {
		t.Errorf("the target was called %d times for 2 runs", c)
	}
}
