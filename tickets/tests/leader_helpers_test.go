package tests

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronoshq/chronos/bus"
	"github.com/chronoshq/chronos/listeners"
	"github.com/chronoshq/chronos/reactor"
	"github.com/chronoshq/chronos/reactor/reactortest"
	"github.com/chronoshq/chronos/sql"
)

// Helpers for the leadership tickets (13, 14). Names start with "ldr" so
// they cannot clash with other areas' helpers in this package.

// ldrInstance is one chronos instance as far as leadership goes: its own
// bus, pool, listener and Leader, the way cmd wires them.
type ldrInstance struct {
	name     string
	bus      *bus.Bus
	db       *sql.DB
	leader   *reactor.Leader
	listener *listeners.Listener
	working  atomic.Bool
	ledAt    atomic.Int64 // UnixNano when the leader work last started
	// following is closed when the Leader first fails to get the lock.
	following chan struct{}
	cancel    context.CancelFunc
	done      chan struct{}
	err       error
}

// ldrStart starts an instance whose leader work just waits for its
// context. poll 0 means the default LEADER_POLL_INTERVAL.
func ldrStart(t *testing.T, dsn, name string, poll time.Duration) *ldrInstance {
	t.Helper()
	in := &ldrInstance{name: name, bus: bus.New(), done: make(chan struct{}), following: make(chan struct{})}
	in.db = reactortest.OpenWarmDB(t, dsn, name+"-pool")
	log := slog.New(reactortest.SignalOn(reactortest.Logger(t).Handler(), reactor.LogFollowing, in.following)).
		With("test_instance", name)
	in.listener = listeners.New(listeners.Config{DSN: dsn, Instance: name}, in.bus, log)
	in.leader = reactor.NewLeader(reactor.LeaderConfig{DSN: dsn, Instance: name, PollInterval: poll}, in.db, in.bus, log)
	ctx, cancel := context.WithCancel(context.Background())
	in.cancel = cancel
	listenerDone := make(chan error, 1)
	go func() { listenerDone <- in.listener.Run(ctx) }()
	go func() {
		defer close(in.done)
		in.err = in.leader.Run(ctx, func(ctx context.Context) {
			in.ledAt.Store(time.Now().UnixNano())
			in.working.Store(true)
			defer in.working.Store(false)
			<-ctx.Done()
		})
		if err := <-listenerDone; err != nil && in.err == nil {
			in.err = err
		}
	}()
	t.Cleanup(func() { in.stop(t) })
	// Wait for the listener, so resignations reach this instance.
	ldrWait(t, 20*time.Second, name+"'s listener", in.listener.Connected)
	return in
}

// stop cancels the instance and waits for it; the leader must have
// released everything.
func (in *ldrInstance) stop(t *testing.T) {
	t.Helper()
	if in.cancel == nil {
		return
	}
	in.cancel()
	in.cancel = nil
	select {
	case <-in.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not stop within 20s", in.name)
	}
	if in.err != nil {
		t.Errorf("%s: Run: %v", in.name, in.err)
	}
	if in.leader.IsLeader() || in.working.Load() {
		t.Errorf("%s after stop: IsLeader=%v working=%v", in.name, in.leader.IsLeader(), in.working.Load())
	}
}

// ldrWait polls cond every millisecond until it holds or d passes.
func ldrWait(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	reactortest.EventuallyEvery(t, d, time.Millisecond, what, cond)
}

// ldrLeading returns the instances that say they lead and whose leader
// work has begun.
func ldrLeading(ins ...*ldrInstance) []*ldrInstance {
	var out []*ldrInstance
	for _, in := range ins {
		if in.leader.IsLeader() && in.working.Load() {
			out = append(out, in)
		}
	}
	return out
}

// ldrKillLeaderConn terminates the leader's dedicated connection: the
// session named instance that holds an advisory lock. It returns once the
// backend has exited (pg_terminate_backend with a timeout waits for it).
// The time returned is when the kill was issued: the connection closes,
// and the lock is free, shortly after it.
func ldrKillLeaderConn(t *testing.T, db *sql.DB, instance string) time.Time {
	t.Helper()
	issued := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int
	err := db.Pool.QueryRow(ctx, `
		SELECT count(pg_terminate_backend(a.pid, 5000))
		  FROM pg_stat_activity a
		  JOIN pg_locks l ON l.pid = a.pid AND l.locktype = 'advisory' AND l.granted AND l.mode = 'ExclusiveLock'
		 WHERE a.application_name = $1`, instance).Scan(&n)
	if err != nil {
		t.Fatalf("terminate %s's leader connection: %v", instance, err)
	}
	if n != 1 {
		t.Fatalf("terminated %d leader connections of %s, want 1", n, instance)
	}
	return issued
}

// ledSince is how long after t the instance's leader work started.
func (in *ldrInstance) ledSince(t time.Time) time.Duration {
	return time.Unix(0, in.ledAt.Load()).Sub(t)
}
