package tests

import (
	"context"
	"io"
	"log/slog"
	nethttp "net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/bus"
	"github.com/chronoshq/chronos/listeners"
	"github.com/chronoshq/chronos/reactor"
	"github.com/chronoshq/chronos/sql"
)

// rxLog logs warnings and errors into the test output (everything with
// CHRONOS_TEST_LOG=debug).
func rxLog(t testing.TB) *slog.Logger {
	lvl := slog.LevelWarn
	if os.Getenv("CHRONOS_TEST_LOG") == "debug" {
		lvl = slog.LevelDebug
	}
	var w io.Writer = io.Discard
	if tt, ok := t.(*testing.T); ok {
		w = tt.Output()
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lvl}))
}

// rxOpen opens a pool on dsn as instance, closed at cleanup.
func rxOpen(t testing.TB, dsn, instance string) *sql.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db, err := sql.Open(ctx, rxLimitPool(dsn), instance)
	if err != nil {
		t.Fatalf("open database: %v", err)
	}
	t.Cleanup(db.Close)
	return db
}

// rxInstance is one chronos instance in a test: its pool, its bus, and the
// reactor and listener it runs (either may be absent).
type rxInstance struct {
	Name     string
	DB       *sql.DB
	Bus      *bus.Bus
	Reactor  *reactor.Reactor
	Listener *listeners.Listener

	stops []func() error
	once  sync.Once
	err   error
}

// rxOptions say what an instance runs.
type rxOptions struct {
	Reactor        bool
	Listener       bool
	ReconnectDelay time.Duration
	Config         reactor.Config
}

// rxStart starts an instance on dsn, stopped at cleanup (reactor first,
// then listener, the order cmd uses).
func rxStart(t testing.TB, dsn, name string, o rxOptions) *rxInstance {
	t.Helper()
	in := &rxInstance{Name: name, DB: rxOpen(t, dsn, name), Bus: bus.New()}
	log := rxLog(t)
	if o.Listener {
		d := o.ReconnectDelay
		if d == 0 {
			d = 50 * time.Millisecond
		}
		in.Listener = listeners.New(listeners.Config{DSN: dsn, Instance: name, ReconnectDelay: d}, in.Bus, log)
		in.stops = append([]func() error{rxRun(in.Listener.Run)}, in.stops...)
		rxEventually(t, 20*time.Second, "listener connected", in.Listener.Connected)
	}
	if o.Reactor {
		cfg := o.Config
		cfg.DSN, cfg.Instance, cfg.AllowPrivateTargets = dsn, name, true
		if cfg.IdlePollInterval == 0 {
			cfg.IdlePollInterval = 200 * time.Millisecond
		}
		if cfg.LeaderPollInterval == 0 {
			cfg.LeaderPollInterval = 100 * time.Millisecond
		}
		if cfg.ShutdownTimeout == 0 {
			cfg.ShutdownTimeout = 2 * time.Second
		}
		in.Reactor = reactor.New(cfg, in.DB, in.Bus, log)
		in.stops = append([]func() error{rxRun(in.Reactor.Run)}, in.stops...)
	}
	t.Cleanup(func() {
		if err := in.Stop(); err != nil {
			t.Errorf("instance %s: %v", name, err)
		}
	})
	return in
}

// rxRun runs fn in a goroutine and returns its stop function.
func rxRun(fn func(context.Context) error) func() error {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	return func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			return context.DeadlineExceeded
		}
	}
}

// Stop stops what the instance runs, once.
func (in *rxInstance) Stop() error {
	in.once.Do(func() {
		for _, stop := range in.stops {
			if err := stop(); err != nil && in.err == nil {
				in.err = err
			}
		}
	})
	return in.err
}

// Trigger enqueues a manual run and publishes it on the local bus, as the
// API's trigger endpoint does.
func (in *rxInstance) Trigger(t testing.TB, jobID int64) *chronos.Run {
	t.Helper()
	run := in.TriggerSilently(t, jobID)
	at := run.AvailableAt
	in.Bus.Publish(chronos.Event{Type: chronos.EventRunChanged, RunID: run.ID, JobID: jobID, Status: chronos.StatusPending, AvailableAt: &at})
	return run
}

// TriggerSilently enqueues a manual run without any local publish: only
// the database's NOTIFY can tell anyone.
func (in *rxInstance) TriggerSilently(t testing.TB, jobID int64) *chronos.Run {
	t.Helper()
	run, err := in.DB.Trigger(context.Background(), jobID)
	if err != nil {
		t.Fatalf("trigger job %d: %v", jobID, err)
	}
	return run
}

// rxJob stores a job with defaults applied. Without cron_expr or run_at it
// is a one-shot a year ahead: it only runs when triggered.
func rxJob(t testing.TB, db *sql.DB, j *chronos.Job) *chronos.Job {
	t.Helper()
	if j.Name == "" {
		j.Name = "ticket"
	}
	if j.CronExpr == nil && j.RunAt == nil {
		at := time.Now().Add(365 * 24 * time.Hour).UTC()
		j.RunAt = &at
	}
	j.Enabled = true
	j.ApplyDefaults()
	if err := j.Validate(); err != nil {
		t.Fatalf("job invalid: %v", err)
	}
	if err := db.CreateJob(context.Background(), j); err != nil {
		t.Fatalf("create job: %v", err)
	}
	return j
}

// rxTarget is an httptest server that counts requests, the most it saw in
// flight at once, and when each arrived.
type rxTarget struct {
	*httptest.Server
	Hits     atomic.Int64
	InFlight atomic.Int64
	MaxSeen  atomic.Int64

	mu       sync.Mutex
	arrivals []time.Time
}

func rxNewTarget(t testing.TB, h nethttp.HandlerFunc) *rxTarget {
	tg := &rxTarget{}
	tg.Server = httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		n := tg.InFlight.Add(1)
		defer tg.InFlight.Add(-1)
		for {
			m := tg.MaxSeen.Load()
			if n <= m || tg.MaxSeen.CompareAndSwap(m, n) {
				break
			}
		}
		tg.mu.Lock()
		tg.arrivals = append(tg.arrivals, time.Now())
		tg.mu.Unlock()
		tg.Hits.Add(1)
		if h != nil {
			h(w, r)
		}
	}))
	t.Cleanup(tg.Close)
	return tg
}

// rxEventually polls cond until it holds, failing after d.
func rxEventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// rxRun reads a run with its attempts.
func rxRunOf(t testing.TB, db *sql.DB, id int64) *chronos.Run {
	t.Helper()
	r, err := db.Run(context.Background(), id)
	if err != nil {
		t.Fatalf("run %d: %v", id, err)
	}
	return r
}

// rxWaitStatus waits until the run reaches status.
func rxWaitStatus(t testing.TB, db *sql.DB, id int64, status chronos.RunStatus, d time.Duration) *chronos.Run {
	t.Helper()
	var r *chronos.Run
	rxEventually(t, d, "run in status "+string(status), func() bool {
		r = rxRunOf(t, db, id)
		return r.Status == status
	})
	return r
}

// rxWaitTerminal waits until the run is succeeded or dead.
func rxWaitTerminal(t testing.TB, db *sql.DB, id int64, d time.Duration) *chronos.Run {
	t.Helper()
	var r *chronos.Run
	rxEventually(t, d, "run finished", func() bool {
		r = rxRunOf(t, db, id)
		return r.Status.Terminal()
	})
	return r
}

// rxLimitPool caps a test pool's connections: the tests of every package share
// one server, and its connection limit is the first thing they exhaust.
func rxLimitPool(dsn string) string {
	if strings.Contains(dsn, "pool_max_conns") {
		return dsn
	}
	if strings.Contains(dsn, "?") {
		return dsn + "&pool_max_conns=8"
	}
	return dsn + "?pool_max_conns=8"
}
