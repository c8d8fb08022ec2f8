package reactor

import (
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/bus"
	"github.com/chronoshq/chronos/reactor/reactortest"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// TestHostBreakerHoldsRunsOnTwoRunningInstances: two instances deliver at
// the same time, one worker slot each. Failures delivered by both trip
// the origin's breaker (the count is the cluster's); while it is open
// neither instance sends the origin anything, then one probe goes, alone
// until it has answered; its success closes the breaker for both, and the
// held runs go, each once, each a first attempt.
//
// One slot per instance is what makes "both" certain rather than likely:
// the target keeps the first request of a pair until the second arrives,
// which only the other instance can send.
func TestHostBreakerHoldsRunsOnTwoRunningInstances(t *testing.T) {
	t.Parallel()
	const (
		failures = 3
		cooldown = 3 * time.Second
		held     = 4 // runs created while the breaker is open: the probe and 3 more
		// margin: the probe may be claimed ClaimAhead (20ms) before its
		// instant, and the database's now() is its transaction's start.
		margin = 100 * time.Millisecond
		// patience bounds every wait: far above what a loaded machine
		// takes, never what the test's duration is made of.
		patience = 30 * time.Second
		// probeWindow: the probe is kept in flight at least this long,
		// five idle polls and ten sweeps of the instance with a free
		// slot: a run released too early would go meanwhile. (A slower
		// machine only makes the check weaker, never wrong.)
		probeWindow = time.Second
	)
	dsn := sqltest.NewURL(t)
	tg := newPhasedTarget(t, failures, patience)
	cfg := Config{WorkerConcurrency: 1, Hosts: HostConfig{BreakerFailures: failures, BreakerCooldown: cooldown,
		SweepInterval: 100 * time.Millisecond}}
	a := startReactor(t, dsn, withInstance(cfg, "both-a"))
	b := startReactor(t, dsn, withInstance(cfg, "both-b"))
	startListener(t, dsn, "both-a", a.bus)
	startListener(t, dsn, "both-b", b.bus)
	// Which instance reports the failure that opens the breaker, or the
	// answer that closes it, is the race's: listen on both.
	opened := subscribeAll(t, chronos.EventHostBreakerOpened, a.bus, b.bus)
	closed := subscribeAll(t, chronos.EventHostBreakerClosed, a.bus, b.bus)
	origin := chronos.Origin(tg.URL)

	j := createJob(t, a.db, &chronos.Job{TargetURL: tg.URL + "/hook", MaxRetries: 0})
	// Triggers alternate between the instances.
	on := func(i int) *instance { return []*instance{a, b}[i%2] }
	var failed []int64
	for i := range failures {
		failed = append(failed, on(i).trigger(t, j.ID).ID)
	}
	var until time.Time
	select {
	case e := <-opened:
		if e.Origin != origin || e.Until == nil || e.Count != failures {
			t.Fatalf("breaker_opened event: %+v", e)
		}
		until = *e.Until
	case <-time.After(patience):
		t.Fatalf("the breaker did not open after %d failures (%d requests)", failures, tg.Hits.Load())
	}
	if n := tg.Hits.Load(); n != failures {
		t.Fatalf("%d requests when the breaker opened, want %d", n, failures)
	}
	// The breaker opened after the last failure arrived: its cooldown
	// runs from then at the earliest.
	if last := tg.arrivals()[failures-1].at; until.Before(last.Add(cooldown - margin)) {
		t.Errorf("the breaker's cooldown ends %v after the last failure, want at least %s", until.Sub(last), cooldown)
	}
	// Both instances delivered failures: the breaker counted them together.
	by := map[string]int{}
	for _, id := range failed {
		r := reactortest.WaitTerminal(t, a.db, id, patience)
		if r.Status != chronos.StatusDead || r.AttemptCount != 1 {
			t.Errorf("failed run %d: %s after %d attempts, want dead after 1", id, r.Status, r.AttemptCount)
		}
		for _, w := range attemptsOf(t, a, id) {
			by[w]++
		}
	}
	if by["both-a"] == 0 || by["both-b"] == 0 {
		t.Errorf("failures delivered by %v, want some by each instance", by)
	}

	// Runs created on either instance during the cooldown wait for it.
	var waiting []int64
	for i := range held {
		waiting = append(waiting, on(i).trigger(t, j.ID).ID)
	}

	var probe arrival
	select {
	case probe = <-tg.probe:
	case <-time.After(cooldown + patience):
		t.Fatal("no probe after the cooldown")
	}
	if probe.at.Before(until.Add(-margin)) {
		t.Errorf("the first request after the breaker opened came %v before the cooldown's end", until.Sub(probe.at))
	}
	// While the probe is held at the target the breaker is probing, the
	// probe is the run the database chose, and the others wait
	// uncounted: neither instance takes one (the other instance's only
	// slot is free).
	select {
	case ar := <-tg.duringProbe:
		t.Errorf("run %d went %v after the probe (run %d), while it was in flight", ar.run, ar.at.Sub(probe.at), probe.run)
	case <-time.After(probeWindow):
	}
	h, err := a.db.Host(t.Context(), origin)
	if err != nil || h.State != chronos.HostProbing || h.ProbeRunID == nil || *h.ProbeRunID != probe.run {
		t.Errorf("host while its probe (run %d) is in flight: %+v %v", probe.run, h, err)
	}
	if !slices.Contains(waiting, probe.run) {
		t.Errorf("the probe is run %d, not one of the runs created while the breaker was open %v", probe.run, waiting)
	}
	for _, id := range waiting {
		if id == probe.run {
			continue
		}
		if r := runOf(t, a.db, id); r.Status != chronos.StatusPending || r.AttemptCount != 0 {
			t.Errorf("run %d while the probe is in flight: %s after %d attempts, want pending after 0", id, r.Status, r.AttemptCount)
		}
	}
	if n := tg.Hits.Load(); n != failures+1 {
		t.Errorf("%d requests while the probe is in flight, want %d", n, failures+1)
	}
	answered := tg.answerProbe()

	select {
	case e := <-closed:
		if e.Origin != origin {
			t.Errorf("breaker_closed event: %+v", e)
		}
	case <-time.After(patience):
		t.Fatal("the breaker did not close after its probe succeeded")
	}
	reactortest.Eventually(t, patience, "every held run delivered", func() bool {
		return tg.Hits.Load() >= failures+held
	})
	deliveredBy := map[string]int{}
	for _, id := range waiting {
		r := reactortest.WaitTerminal(t, a.db, id, patience)
		if r.Status != chronos.StatusSucceeded || r.AttemptCount != 1 {
			t.Errorf("held run %d: %s after %d attempts, want succeeded after 1 (waiting is not an attempt)",
				id, r.Status, r.AttemptCount)
		}
		ws := attemptsOf(t, a, id)
		if len(ws) != 1 {
			t.Errorf("held run %d has %d attempts recorded, want 1", id, len(ws))
		}
		for _, w := range ws {
			deliveredBy[w]++
		}
	}
	// The two runs after the probe were a pair: one by each instance,
	// so the close reached both.
	if deliveredBy["both-a"] == 0 || deliveredBy["both-b"] == 0 {
		t.Errorf("held runs delivered by %v, want some by each instance", deliveredBy)
	}

	arrivals := tg.arrivals()
	if len(arrivals) != failures+held {
		t.Fatalf("%d requests in all, want %d: %+v", len(arrivals), failures+held, arrivals)
	}
	seen := map[int64]bool{}
	for i, ar := range arrivals {
		if seen[ar.run] {
			t.Errorf("run %d delivered twice", ar.run)
		}
		seen[ar.run] = true
		if i < failures {
			continue
		}
		if ar.at.Before(until.Add(-margin)) {
			t.Errorf("run %d went %v before the cooldown's end", ar.run, until.Sub(ar.at))
		}
		if ar.run != probe.run && !ar.at.After(answered) {
			t.Errorf("run %d went before the probe (run %d) had answered", ar.run, probe.run)
		}
	}
	h, err = a.db.Host(t.Context(), origin)
	if err != nil || h.State != chronos.HostOK || h.BreakerOpens != 1 || h.ConsecutiveFailures != 0 || h.ProbeRunID != nil {
		t.Errorf("host after closing: %+v %v", h, err)
	}
}

// attemptsOf lists who delivered each recorded attempt of run id, by
// attempt (run_attempts_all: a first attempt that succeeded at once is
// recorded on the run itself).
func attemptsOf(t *testing.T, in *instance, id int64) []string {
	t.Helper()
	rows, err := in.db.Pool.Query(t.Context(), `SELECT worker_id FROM run_attempts_all WHERE run_id = $1 ORDER BY attempt`, id)
	if err != nil {
		t.Fatalf("attempts of run %d: %v", id, err)
	}
	defer rows.Close()
	var ws []string
	for rows.Next() {
		var w string
		if err := rows.Scan(&w); err != nil {
			t.Fatalf("attempts of run %d: %v", id, err)
		}
		ws = append(ws, w)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("attempts of run %d: %v", id, err)
	}
	return ws
}

// subscribeAll merges the events of type typ from several instances' buses
// into one channel, until the test ends.
func subscribeAll(t *testing.T, typ chronos.EventType, buses ...*bus.Bus) <-chan chronos.Event {
	t.Helper()
	out := make(chan chronos.Event, 16)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, b := range buses {
		sub := b.Subscribe(16, func(e chronos.Event) bool { return e.Type == typ })
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer sub.Close()
			for {
				select {
				case <-done:
					return
				case e, ok := <-sub.C():
					if !ok {
						return
					}
					select {
					case out <- e:
					case <-done:
						return
					}
				}
			}
		}()
	}
	t.Cleanup(func() { close(done); wg.Wait() })
	return out
}

// arrival is one request at a phasedTarget: the run it delivered and when.
type arrival struct {
	run int64
	at  time.Time
}

// phasedTarget is a target that fails, then recovers. Its first failures
// requests answer 500, the first two of them as a pair (the first waits
// for the second to arrive). Then it is up: the next request is taken for
// the breaker's probe (none may come before it, while the breaker is
// open), handed to the test on probe and held until answerProbe; the two
// after it are a pair again, and every request answers 200. A request
// after the probe that comes before answerProbe is also handed to the
// test, on duringProbe. A wait of a pair or of the probe gives up after
// patience, so a broken breaker fails the test rather than hanging it.
type phasedTarget struct {
	*reactortest.Target
	probe       chan arrival
	duringProbe chan arrival // the first request that arrived while the probe was held

	failures int64
	patience time.Duration
	calls    atomic.Int64
	pairs    [2]*gate       // opened by the second request of each pair
	release  *gate          // opened by answerProbe
	answered chan time.Time // when the probe's handler returned

	mu  sync.Mutex
	log []arrival
}

func newPhasedTarget(t *testing.T, failures int, patience time.Duration) *phasedTarget {
	p := &phasedTarget{probe: make(chan arrival, 1), duringProbe: make(chan arrival, 1), failures: int64(failures), patience: patience,
		pairs: [2]*gate{newGate(), newGate()}, release: newGate(), answered: make(chan time.Time, 1)}
	p.Target = reactortest.NewTarget(t, p.serve)
	// Registered after the target's Close, so run before it: a handler
	// still waiting would keep Close waiting.
	t.Cleanup(func() {
		p.pairs[0].open()
		p.pairs[1].open()
		p.release.open()
	})
	return p
}

func (p *phasedTarget) serve(w http.ResponseWriter, r *http.Request) {
	run, _ := strconv.ParseInt(r.Header.Get(HeaderRunID), 10, 64)
	ar := arrival{run: run, at: time.Now()}
	p.mu.Lock()
	p.log = append(p.log, ar)
	p.mu.Unlock()
	n := p.calls.Add(1)
	if n > p.failures+1 && !p.release.isOpen() {
		select {
		case p.duringProbe <- ar:
		default: // the first one is enough
		}
	}
	switch {
	case n <= p.failures:
		p.pair(0, n == 1, n == 2)
		w.WriteHeader(http.StatusInternalServerError)
	case n == p.failures+1:
		p.probe <- ar
		p.release.wait(p.patience)
		p.answered <- time.Now()
	case n <= p.failures+3:
		p.pair(1, n == p.failures+2, n == p.failures+3)
	}
}

// pair makes the first request of pair i wait for the second (at most
// patience).
func (p *phasedTarget) pair(i int, first, second bool) {
	switch {
	case first:
		p.pairs[i].wait(p.patience)
	case second:
		p.pairs[i].open()
	}
}

// answerProbe lets the probe's request answer, and returns when its
// handler returned: anything that arrives later came after the probe's
// answer.
func (p *phasedTarget) answerProbe() time.Time {
	p.release.open()
	return <-p.answered
}

// arrivals returns the requests so far, in their order.
func (p *phasedTarget) arrivals() []arrival {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.log)
}

// gate is a channel closed once, by whoever opens it first (a handler or
// the test's cleanup).
type gate struct {
	c    chan struct{}
	once sync.Once
}

func newGate() *gate { return &gate{c: make(chan struct{})} }

func (g *gate) open() { g.once.Do(func() { close(g.c) }) }

func (g *gate) isOpen() bool {
	select {
	case <-g.c:
		return true
	default:
		return false
	}
}

// wait returns once g is open, or after d.
func (g *gate) wait(d time.Duration) {
	select {
	case <-g.c:
	case <-time.After(d):
	}
}
