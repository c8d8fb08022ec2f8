package reactor

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/bus"
	"github.com/chronoshq/chronos/sql"
)

// testLog logs warnings and errors to the test's output, everything with
// CHRONOS_TEST_LOG=debug.
func testLog(t *testing.T) *slog.Logger {
	lvl := slog.LevelWarn
	if os.Getenv("CHRONOS_TEST_LOG") == "debug" {
		lvl = slog.LevelDebug
	}
	var w io.Writer = t.Output()
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lvl}))
}

// openDB opens a pool on dsn, closed at cleanup.
func openDB(t *testing.T, dsn, instance string) *sql.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db, err := sql.Open(ctx, limitPool(dsn), instance)
	if err != nil {
		t.Fatalf("open database: %v", err)
	}
	t.Cleanup(db.Close)
	return db
}

// instance is a running reactor in a test.
type instance struct {
	r      *Reactor
	db     *sql.DB
	bus    *bus.Bus
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// startReactor runs a reactor on dsn until stop or cleanup, and fails the
// test when Run returns an error. Each prepare function may adjust the
// reactor before it runs.
func startReactor(t *testing.T, dsn string, cfg Config, prepare ...func(*Reactor)) *instance {
	t.Helper()
	cfg.DSN = dsn
	if cfg.Instance == "" {
		cfg.Instance = "test-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	if cfg.IdlePollInterval == 0 {
		cfg.IdlePollInterval = 200 * time.Millisecond
	}
	if cfg.LeaderPollInterval == 0 {
		cfg.LeaderPollInterval = 100 * time.Millisecond
	}
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = 2 * time.Second
	}
	cfg.AllowPrivateTargets = true
	db := openDB(t, dsn, cfg.Instance)
	b := bus.New()
	in := &instance{r: New(cfg, db, b, testLog(t)), db: db, bus: b, done: make(chan error, 1)}
	for _, p := range prepare {
		p(in.r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in.cancel = cancel
	go func() { in.done <- in.r.Run(ctx) }()
	t.Cleanup(func() {
		if err := in.stop(); err != nil {
			t.Errorf("reactor %s: %v", cfg.Instance, err)
		}
	})
	return in
}

// stop cancels the reactor and waits for Run to return.
func (in *instance) stop() error {
	in.once.Do(func() {
		in.cancel()
		select {
		case in.err = <-in.done:
		case <-time.After(30 * time.Second):
			in.err = context.DeadlineExceeded
		}
	})
	return in.err
}

// trigger enqueues a manual run of job and publishes it on the local bus,
// the way the API's trigger endpoint does.
func (in *instance) trigger(t testing.TB, jobID int64) *chronos.Run {
	t.Helper()
	run, err := in.db.Trigger(context.Background(), jobID)
	if err != nil {
		t.Fatalf("trigger job %d: %v", jobID, err)
	}
	at := run.AvailableAt
	in.bus.Publish(chronos.Event{Type: chronos.EventRunChanged, RunID: run.ID, JobID: jobID, Status: chronos.StatusPending, AvailableAt: &at})
	return run
}

// createJob stores a job with the defaults applied; a nil cron_expr and
// run_at make it a one-shot far in the future (only triggered runs).
func createJob(t testing.TB, db *sql.DB, j *chronos.Job) *chronos.Job {
	t.Helper()
	if j.Name == "" {
		j.Name = "test"
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

// target is an httptest server that counts requests and the most it saw in
// flight at once.
type target struct {
	*httptest.Server
	hits     atomic.Int64
	inFlight atomic.Int64
	maxSeen  atomic.Int64
}

func newTarget(t *testing.T, h http.HandlerFunc) *target {
	tg := &target{}
	tg.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := tg.inFlight.Add(1)
		defer tg.inFlight.Add(-1)
		for {
			m := tg.maxSeen.Load()
			if n <= m || tg.maxSeen.CompareAndSwap(m, n) {
				break
			}
		}
		tg.hits.Add(1)
		if h != nil {
			h(w, r)
		}
	}))
	t.Cleanup(tg.Close)
	return tg
}

// eventually polls cond every few milliseconds until it holds or d passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// runStatus reads a run.
func runOf(t testing.TB, db *sql.DB, id int64) *chronos.Run {
	t.Helper()
	r, err := db.Run(context.Background(), id)
	if err != nil {
		t.Fatalf("run %d: %v", id, err)
	}
	return r
}

// limitPool caps a test pool's connections: the tests of every package share
// one server, and its connection limit is the first thing they exhaust.
func limitPool(dsn string) string {
	if strings.Contains(dsn, "pool_max_conns") {
		return dsn
	}
	if strings.Contains(dsn, "?") {
		return dsn + "&pool_max_conns=8"
	}
	return dsn + "?pool_max_conns=8"
}
