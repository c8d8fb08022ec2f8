package reactor

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/bus"
	"github.com/chronoshq/chronos/internal/testlog"
	"github.com/chronoshq/chronos/internal/testwait"
	"github.com/chronoshq/chronos/reactor/reactortest"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// ltDB returns the DSN of a fresh database and a pool on it whose
// connections are named "leader-test-pool", so that application_name =
// instance finds only a Leader's own connection.
func ltDB(t *testing.T) (string, *sql.DB) {
	t.Helper()
	dsn := sqltest.NewURL(t)
	return dsn, reactortest.OpenWarmDB(t, dsn, "leader-test-pool")
}

// ltRunning is a Leader running in the background with a work function
// that records what it sees.
type ltRunning struct {
	*Leader
	name      string
	bus       *bus.Bus
	cancel    context.CancelFunc
	done      chan error
	working   atomic.Bool   // work is running
	started   atomic.Int32  // times work started
	badState  atomic.Bool   // work ran while IsLeader was false
	following chan struct{} // closed when it first fails to get the lock
}

// ltActive counts the work functions running at once across the Leaders of
// one test.
type ltActive struct{ n, max atomic.Int32 }

func (a *ltActive) enter() {
	n := a.n.Add(1)
	for {
		m := a.max.Load()
		if n <= m || a.max.CompareAndSwap(m, n) {
			return
		}
	}
}

func ltStart(t *testing.T, dsn string, db *sql.DB, name string, poll time.Duration, act *ltActive) *ltRunning {
	t.Helper()
	b := bus.New()
	rl := &ltRunning{name: name, bus: b, done: make(chan error, 1), following: make(chan struct{})}
	log := slog.New(reactortest.SignalOn(testlog.Verbose(t).Handler(), LogFollowing, rl.following))
	rl.Leader = NewLeader(LeaderConfig{DSN: dsn, Instance: name, PollInterval: poll}, db, b, log)
	ctx, cancel := context.WithCancel(context.Background())
	rl.cancel = cancel
	work := func(ctx context.Context) {
		if act != nil {
			act.enter()
			defer act.n.Add(-1)
		}
		rl.working.Store(true)
		rl.started.Add(1)
		<-ctx.Done()
		if !rl.IsLeader() {
			rl.badState.Store(true) // IsLeader went false before work returned
		}
		rl.working.Store(false)
	}
	go func() { rl.done <- rl.Run(ctx, work) }()
	t.Cleanup(func() { rl.stop(t) })
	return rl
}

// stop cancels the Leader and checks that Run returns nil with the work
// stopped.
func (rl *ltRunning) stop(t *testing.T) {
	t.Helper()
	if rl.cancel == nil {
		return
	}
	rl.cancel()
	rl.cancel = nil
	testwait.Nil(t, rl.done, 20*time.Second, rl.name+": Run after cancel")
	if rl.IsLeader() || rl.working.Load() {
		t.Errorf("%s: after Run returned: IsLeader=%v working=%v", rl.name, rl.IsLeader(), rl.working.Load())
	}
	if rl.badState.Load() {
		t.Errorf("%s: IsLeader was false while work was still running", rl.name)
	}
}

// ltWaitFor polls cond every 2ms until it holds or d passes.
func ltWaitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	reactortest.EventuallyEvery(t, d, 2*time.Millisecond, what, cond)
}

// ltLeaderOf returns the leading one of ls, or nil; it fails if several lead.
func ltLeaderOf(t *testing.T, ls ...*ltRunning) *ltRunning {
	t.Helper()
	var got *ltRunning
	for _, l := range ls {
		if l.IsLeader() {
			if got != nil {
				t.Fatalf("both %s and %s lead", got.name, l.name)
			}
			got = l
		}
	}
	return got
}

func TestLeaderOnlyOneOfThree(t *testing.T) {
	t.Parallel()
	dsn, db := ltDB(t)
	var act ltActive
	ls := []*ltRunning{
		ltStart(t, dsn, db, "one-a", 20*time.Millisecond, &act),
		ltStart(t, dsn, db, "one-b", 20*time.Millisecond, &act),
		ltStart(t, dsn, db, "one-c", 20*time.Millisecond, &act),
	}
	ltWaitFor(t, 20*time.Second, "a leader", func() bool { return ltLeaderOf(t, ls...) != nil })
	lead := ltLeaderOf(t, ls...)
	// Over many follower polls, the leadership neither moves nor doubles.
	for range 50 {
		time.Sleep(5 * time.Millisecond)
		if got := ltLeaderOf(t, ls...); got != lead {
			t.Fatalf("leader changed from %s to %v without a failure", lead.name, got)
		}
	}
	if h := reactortest.LockHolder(t, db); h != lead.name {
		t.Fatalf("lock held by %q, IsLeader says %s", h, lead.name)
	}
	if m := act.max.Load(); m != 1 {
		t.Fatalf("%d leader works ran at once, want 1", m)
	}
	ltWaitFor(t, 20*time.Second, "work to start", func() bool { return lead.started.Load() >= 1 })
	if n := lead.started.Load(); n != 1 {
		t.Fatalf("work started %d times, want 1", n)
	}
}

func TestLeaderGracefulStopHandsOver(t *testing.T) {
	t.Parallel()
	dsn, db := ltDB(t)
	var act ltActive
	a := ltStart(t, dsn, db, "hand-a", 20*time.Millisecond, &act)
	ltWaitFor(t, 20*time.Second, "a to lead", a.IsLeader)
	b := ltStart(t, dsn, db, "hand-b", 20*time.Millisecond, &act)
	a.stop(t)
	ltWaitFor(t, 20*time.Second, "b to lead", b.IsLeader)
	if h := reactortest.LockHolder(t, db); h != "hand-b" {
		t.Fatalf("lock held by %q, want hand-b", h)
	}
	if m := act.max.Load(); m != 1 {
		t.Fatalf("%d leader works ran at once, want 1", m)
	}
}

// A follower waits in the server's lock queue, so it takes over the moment
// the leader lets go: with a one-minute poll and no resignation notice on
// its bus, it still leads at once.
func TestLeaderFollowerTakesOverWithoutPoll(t *testing.T) {
	t.Parallel()
	dsn, db := ltDB(t)
	a := ltStart(t, dsn, db, "wake-a", time.Minute, nil)
	ltWaitFor(t, 20*time.Second, "a to lead", a.IsLeader)
	b := ltStart(t, dsn, db, "wake-b", time.Minute, nil)
	select {
	case <-b.following:
	case <-time.After(20 * time.Second):
		t.Fatalf("b never tried for the lock")
	}
	a.stop(t)
	// Well under the one-minute poll: only the lock queue explains it.
	ltWaitFor(t, 20*time.Second, "b to lead after a stopped", b.IsLeader)
}

// The lock lives on the Leader's connection; after Run returns it is free
// at once (no waiting for the server to notice a closed connection).
func TestLeaderCancelReleasesLock(t *testing.T) {
	t.Parallel()
	dsn, db := ltDB(t)
	a := ltStart(t, dsn, db, "rel-a", 20*time.Millisecond, nil)
	ltWaitFor(t, 20*time.Second, "a to lead", a.IsLeader)
	if h := reactortest.LockHolder(t, db); h != "rel-a" {
		t.Fatalf("lock held by %q, want rel-a", h)
	}
	sub := a.bus.Subscribe(10, func(e chronos.Event) bool { return e.Type == chronos.EventLeaderChanged })
	defer sub.Close()
	a.stop(t)
	if h := reactortest.LockHolder(t, db); h != "" {
		t.Fatalf("lock still held by %q after Run returned", h)
	}
	select {
	case e := <-sub.C():
		if e.Leader || e.Instance != "rel-a" {
			t.Fatalf("event = %+v, want rel-a no longer leader", e)
		}
	default:
		t.Fatalf("no EventLeaderChanged{Leader:false} published")
	}
}

// ltBackends counts the server sessions named name.
func ltBackends(t *testing.T, db *sql.DB, name string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var n int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", name).Scan(&n); err != nil {
		t.Fatalf("count backends: %v", err)
	}
	return n
}

func TestLeaderStepsDownWhenConnectionDies(t *testing.T) {
	t.Parallel()
	dsn, db := ltDB(t)
	a := ltStart(t, dsn, db, "die-a", 100*time.Millisecond, nil)
	sub := a.bus.Subscribe(10, func(e chronos.Event) bool { return e.Type == chronos.EventLeaderChanged })
	defer sub.Close()
	ltWaitFor(t, 20*time.Second, "a to lead", a.IsLeader)
	<-sub.C() // Leader: true
	sqltest.Terminate(t, db, "die-a")
	killed := time.Now()
	select {
	case e := <-sub.C():
		if e.Leader {
			t.Fatalf("event = %+v, want a stepping down", e)
		}
		t.Logf("stepped down %v after the kill", time.Since(killed).Round(time.Microsecond))
	case <-time.After(20 * time.Second):
		t.Fatalf("a did not step down after its connection was killed")
	}
	if a.working.Load() {
		t.Fatalf("work still running after stepping down")
	}
	// With nobody else around it reconnects and leads again.
	select {
	case e := <-sub.C():
		if !e.Leader {
			t.Fatalf("event = %+v, want a leading again", e)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("a did not lead again after reconnecting")
	}
	ltWaitFor(t, 20*time.Second, "work to start again", func() bool { return a.started.Load() == 2 })
}

func TestLeaderFollowerReconnects(t *testing.T) {
	t.Parallel()
	dsn, db := ltDB(t)
	a := ltStart(t, dsn, db, "fr-a", 20*time.Millisecond, nil)
	ltWaitFor(t, 20*time.Second, "a to lead", a.IsLeader)
	b := ltStart(t, dsn, db, "fr-b", 20*time.Millisecond, nil)
	ltWaitFor(t, 20*time.Second, "b to connect", func() bool { return ltBackends(t, db, "fr-b") == 1 })
	sqltest.Terminate(t, db, "fr-b")
	ltWaitFor(t, 20*time.Second, "b to reconnect", func() bool { return ltBackends(t, db, "fr-b") == 1 })
	a.stop(t)
	ltWaitFor(t, 20*time.Second, "b to lead", b.IsLeader)
}

// A work function that returns by itself gives the leadership up: the lock
// is released (another instance may take it) and it is tried for again.
func TestLeaderWorkReturningGivesUp(t *testing.T) {
	t.Parallel()
	dsn, db := ltDB(t)
	b := bus.New()
	l := NewLeader(LeaderConfig{DSN: dsn, Instance: "ret-a", PollInterval: 20 * time.Millisecond}, db, b, testlog.Verbose(t))
	sub := b.Subscribe(100, func(e chronos.Event) bool { return e.Type == chronos.EventLeaderChanged })
	defer sub.Close()
	var runs atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, func(context.Context) { runs.Add(1) }) }()
	ltWaitFor(t, 20*time.Second, "work to run twice", func() bool { return runs.Load() >= 2 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	want := true
	for {
		select {
		case e := <-sub.C():
			if e.Leader != want {
				t.Fatalf("leadership events out of order: got Leader=%v, want %v", e.Leader, want)
			}
			want = !want
			continue
		default:
		}
		break
	}
	if !want || l.IsLeader() {
		t.Fatalf("the last event must be a step-down, and IsLeader false after Run")
	}
	if h := reactortest.LockHolder(t, db); h != "" {
		t.Fatalf("lock held by %q after Run returned", h)
	}
}

func TestLeaderRunTwice(t *testing.T) {
	t.Parallel()
	dsn, db := ltDB(t)
	a := ltStart(t, dsn, db, "twice-a", 20*time.Millisecond, nil)
	ltWaitFor(t, 20*time.Second, "a to lead", a.IsLeader)
	if err := a.Run(context.Background(), nil); err == nil {
		t.Fatalf("a second concurrent Run returned nil")
	}
}

func TestLeaderUnreachableStopsOnCancel(t *testing.T) {
	t.Parallel()
	// No database at all: the pool is never used, since it never leads.
	l := NewLeader(LeaderConfig{DSN: "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable", Instance: "unreach"}, nil, bus.New(), testlog.Verbose(t))
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, nil) }()
	testwait.Nil(t, done, 20*time.Second, "Run after its context ended")
	if l.IsLeader() {
		t.Fatalf("leads without a database")
	}
}

// startLeader is startReactor, once the reactor leads (the only one on
// dsn, it soon does).
func startLeader(t *testing.T, dsn string, cfg Config) *instance {
	t.Helper()
	in := startReactor(t, dsn, cfg)
	eventually(t, 20*time.Second, "leadership", in.r.IsLeader)
	return in
}
