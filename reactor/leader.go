package reactor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/bus"
	"github.com/chronoshq/chronos/sql"
)

// LeaderConfig configures a Leader.
type LeaderConfig struct {
	DSN      string // the database; the Leader opens its own dedicated connection to it
	Instance string // this instance's name (the leadership connection's application_name)
	// PollInterval is how often a follower tries for the lock (default
	// DefaultLeaderPollInterval). The leader pings its connection every
	// PollInterval/4, at most every leaderMaxPingEvery.
	PollInterval time.Duration
}

const (
	// leaderMaxPingEvery bounds how long a leader can go without noticing
	// that its connection (and with it the lock) is gone.
	leaderMaxPingEvery = 250 * time.Millisecond
	// leaderOpTimeout bounds every statement on the leadership connection
	// and the resignation notice. Statements run under a context detached
	// from Run's, so a shutdown never interrupts one midway: a TryLock that
	// shutdown cut short would leave us not knowing whether we hold the
	// lock.
	leaderOpTimeout = 2 * time.Second
	// leaderMaxWait caps one wait in the lock queue, and with it how long
	// a follower can hold up a shutdown.
	leaderMaxWait = time.Second
	// leaderConnectTimeout bounds opening the leadership connection.
	leaderConnectTimeout = 5 * time.Second
	// leaderMaxBackoff caps the wait between reconnects while the database
	// is unreachable.
	leaderMaxBackoff = 5 * time.Second
)

// LogFollowing is the message a Leader logs (at debug level) when a try
// for the lock fails and it starts to follow; tests wait for it.
const LogFollowing = "following: the lock is held elsewhere"

// Leader elects one leader among the instances sharing a database: whoever
// holds a Postgres advisory lock, on a dedicated connection, leads.
//
// A follower waits for the lock in the server's lock queue, one
// PollInterval (at most a second) at a time, so it is handed the lock the
// instant the leader's session ends, even after a kill -9; between waits,
// another instance's resignation (EventLeaderChanged with Op "resigned",
// from the listener) makes it try at once. The leader runs the leader work and pings
// its connection; if a ping fails it stops the work at once, since the
// server may already have handed the lock to someone else.
//
// Steps down in a fixed order, on every path: stop the ping ticker, cancel
// the leader work and wait for it to return, unlock, announce the
// resignation, close the connection. IsLeader is true only while the work
// runs.
type Leader struct {
	cfg     LeaderConfig
	db      *sql.DB
	bus     *bus.Bus
	log     *slog.Logger
	leading atomic.Bool
	running atomic.Bool
}

// NewLeader returns a Leader for cfg. db (a pool) carries the resignation
// notices; the lock itself lives on a connection of the Leader's own. A nil
// log means slog.Default().
func NewLeader(cfg LeaderConfig, db *sql.DB, b *bus.Bus, log *slog.Logger) *Leader {
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultLeaderPollInterval
	}
	if log == nil {
		log = slog.Default()
	}
	return &Leader{cfg: cfg, db: db, bus: b, log: log.With("component", "leader", "instance", cfg.Instance)}
}

// IsLeader reports whether this instance leads now. While it is true the
// leader work is running; once it is false the work has returned.
func (l *Leader) IsLeader() bool { return l.leading.Load() }

// pingEvery is how often the leader checks its connection.
func (l *Leader) pingEvery() time.Duration {
	return min(l.cfg.PollInterval/4, leaderMaxPingEvery)
}

// pingTimeout is how long a ping may take before the leader gives up on
// its connection.
func (l *Leader) pingTimeout() time.Duration {
	return min(max(l.cfg.PollInterval, 500*time.Millisecond), leaderOpTimeout)
}

// backoff is the wait before reconnect attempt n (n >= 1).
func (l *Leader) backoff(n int) time.Duration {
	base := min(l.cfg.PollInterval, 250*time.Millisecond)
	return chronos.BackoffDelay(chronos.BackoffExponential, base, leaderMaxBackoff, n)
}

// Run takes part in the election until ctx ends. While this instance holds
// the lock it runs work(leaderCtx) in a goroutine; leaderCtx is cancelled
// when leadership ends, and Run waits for work to return before it lets go
// of the lock. A work that returns by itself gives up the leadership (the
// instance becomes a follower again). Run returns nil when ctx ends, with
// the lock released and work returned.
func (l *Leader) Run(ctx context.Context, work func(ctx context.Context)) error {
	if !l.running.CompareAndSwap(false, true) {
		return errors.New("leader: already running")
	}
	defer l.running.Store(false)
	if work == nil {
		work = func(ctx context.Context) { <-ctx.Done() }
	}

	self := l.cfg.Instance
	wake := l.bus.SubscribeWake(func(e chronos.Event) bool {
		return e.Type == chronos.EventLeaderChanged && e.Op == "resigned" && e.Instance != self
	})
	defer wake.Close()

	failures := 0
	for {
		if failures > 0 {
			t := time.NewTimer(l.backoff(failures))
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		cctx, cancel := context.WithTimeout(ctx, leaderConnectTimeout)
		conn, err := sql.ConnectLeader(cctx, l.cfg.DSN, l.cfg.Instance)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			failures++
			l.log.Warn("leader connect failed", "err", err, "attempt", failures)
			continue
		}
		failures = 0
		if err := l.session(ctx, conn, wake, work); err != nil {
			failures = 1
			l.log.Warn("leadership connection lost; reconnecting", "err", err)
			continue
		}
		return nil // session returns nil only when ctx ended
	}
}

// session follows and leads on one connection until ctx ends (nil) or the
// connection fails (an error). Either way, on return the lock is not held
// by this instance, work has returned and conn is closed.
func (l *Leader) session(ctx context.Context, conn *sql.LeaderConn, wake *bus.Wake, work func(context.Context)) error {
	poll := time.NewTicker(l.cfg.PollInterval)
	defer poll.Stop()
	following := false
	for {
		var ok bool
		var err error
		if following {
			// Wait in the server's lock queue rather than poll: the lock
			// passes to us the instant the leader's session ends, even
			// after a kill -9 that announced nothing.
			ok, err = l.waitLock(conn)
		} else {
			ok, err = l.tryLock(conn)
		}
		if e := conn.Evicted(); e != "" {
			l.log.Warn("ended the leadership session of a binary too old to know the schema's minimum: upgrade it", "holder", e)
		}
		if err != nil {
			// The outcome is unknown: the lock may have been taken. Closing
			// the connection releases it either way.
			l.close(conn)
			return fmt.Errorf("try lock: %w", err)
		}
		if !ok && !following {
			following = true
			l.log.Debug(LogFollowing)
		}
		if ok {
			following = false
			if ctx.Err() != nil {
				// Shutdown landed while the lock was being taken: let go
				// without starting any work.
				l.resign(conn)
				l.close(conn)
				return nil
			}
			if err := l.lead(ctx, conn, work); err != nil {
				return err
			}
			if ctx.Err() != nil {
				return nil
			}
			// The work returned by itself: leadership was given up, follow
			// again from the next poll.
			poll.Reset(l.cfg.PollInterval)
		}
		if following && ctx.Err() == nil {
			// waitLock already waited out the poll interval.
			continue
		}
		select {
		case <-ctx.Done():
			l.close(conn) // a follower holds nothing
			return nil
		case <-poll.C:
		case <-wake.C():
		}
	}
}

// lead runs work while this instance holds the lock. It returns nil after
// a clean step-down (ctx ended: the connection is closed too; or work
// returned by itself: the connection stays open) and an error when the
// connection failed (closed by then).
func (l *Leader) lead(ctx context.Context, conn *sql.LeaderConn, work func(context.Context)) error {
	workCtx, cancelWork := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		work(workCtx)
	}()
	l.setLeading(true, "acquired the lock")

	ping := time.NewTicker(l.pingEvery())
	var lost error
	reason := "shutdown"
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-done:
			if ctx.Err() == nil {
				reason = "leader work returned"
			}
			break loop
		case <-ping.C:
			if err := l.ping(conn); err != nil {
				lost = err
				break loop
			}
		}
	}

	// The fixed order: stop the ticker, stop the work and wait for it, and
	// only then let go of the lock, announce, close.
	ping.Stop()
	cancelWork()
	<-done
	if lost != nil {
		// The server may already have released the lock to someone else;
		// the work has stopped, and closing makes sure it is released.
		l.setLeading(false, "connection failed")
		l.close(conn)
		l.announce()
		return fmt.Errorf("leader ping: %w", lost)
	}
	l.setLeading(false, reason)
	if err := l.resign(conn); err != nil {
		l.close(conn)
		return err
	}
	if ctx.Err() != nil {
		l.close(conn)
	}
	return nil
}

// setLeading records and publishes a leadership change.
func (l *Leader) setLeading(leading bool, reason string) {
	l.leading.Store(leading)
	if leading {
		l.log.Info("leadership gained", "reason", reason)
	} else {
		l.log.Info("leadership ended", "reason", reason)
	}
	l.bus.Publish(chronos.Event{Type: chronos.EventLeaderChanged, Instance: l.cfg.Instance, Leader: leading})
}

// resign unlocks and announces the resignation. An error means the unlock
// failed (the caller closes the connection, which releases the lock); the
// resignation is announced anyway.
func (l *Leader) resign(conn *sql.LeaderConn) error {
	ctx, cancel := context.WithTimeout(context.Background(), leaderOpTimeout)
	err := conn.Unlock(ctx)
	cancel()
	l.announce()
	if err != nil {
		return fmt.Errorf("unlock: %w", err)
	}
	return nil
}

// announce tells the followers, through the pool, that the lock is free.
func (l *Leader) announce() {
	ctx, cancel := context.WithTimeout(context.Background(), leaderOpTimeout)
	defer cancel()
	if err := l.db.AnnounceResignation(ctx, l.cfg.Instance); err != nil {
		l.log.Warn("announce resignation failed; followers will find the lock free on their next poll", "err", err)
	}
}

func (l *Leader) tryLock(conn *sql.LeaderConn) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), leaderOpTimeout)
	defer cancel()
	return conn.TryLock(ctx)
}

// waitLock waits in the lock queue for at most one poll interval, capped
// at leaderMaxWait so that a shutdown is never held up for long. The wait
// runs under a detached context and ends by itself (lock_timeout), so a
// shutdown never cuts it short with the outcome unknown.
func (l *Leader) waitLock(conn *sql.LeaderConn) (bool, error) {
	wait := min(l.cfg.PollInterval, leaderMaxWait)
	ctx, cancel := context.WithTimeout(context.Background(), wait+leaderOpTimeout)
	defer cancel()
	return conn.WaitLock(ctx, wait)
}

func (l *Leader) ping(conn *sql.LeaderConn) error {
	ctx, cancel := context.WithTimeout(context.Background(), l.pingTimeout())
	defer cancel()
	return conn.Ping(ctx)
}

func (l *Leader) close(conn *sql.LeaderConn) {
	ctx, cancel := context.WithTimeout(context.Background(), leaderOpTimeout)
	defer cancel()
	if err := conn.Close(ctx); err != nil {
		l.log.Debug("leader connection close", "err", err)
	}
}
