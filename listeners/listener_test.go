package listeners_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/bus"
	"github.com/chronoshq/chronos/internal/testlog"
	"github.com/chronoshq/chronos/internal/testwait"
	"github.com/chronoshq/chronos/listeners"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// harness is one running listener on a fresh database.
type harness struct {
	t        *testing.T
	dsn      string
	db       *sql.DB
	bus      *bus.Bus
	sub      *bus.Subscription
	l        *listeners.Listener
	instance string
	cancel   context.CancelFunc
	done     chan error
}

func start(t *testing.T, instance string) *harness {
	t.Helper()
	dsn := sqltest.NewURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := sql.Open(ctx, dsn, "test-"+instance)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(db.Close)
	h := &harness{t: t, dsn: dsn, db: db, bus: bus.New(), instance: instance, done: make(chan error, 1)}
	h.sub = h.bus.Subscribe(1000, nil)
	t.Cleanup(h.sub.Close)
	h.l = listeners.New(listeners.Config{DSN: dsn, Instance: instance}, h.bus, testlog.Verbose(t))
	runCtx, runCancel := context.WithCancel(context.Background())
	h.cancel = runCancel
	go func() { h.done <- h.l.Run(runCtx) }()
	t.Cleanup(h.stop)
	return h
}

// stop cancels Run and checks that it returns nil promptly.
func (h *harness) stop() {
	h.t.Helper()
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.cancel = nil
	testwait.Nil(h.t, h.done, 20*time.Second, "Run after cancel")
	if h.l.Connected() {
		h.t.Errorf("Connected() is true after Run returned")
	}
}

// next waits for the next event of type typ, failing on timeout. Events of
// other types are skipped unless they are in fail.
func (h *harness) next(typ chronos.EventType, timeout time.Duration, fail ...chronos.EventType) chronos.Event {
	h.t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case e := <-h.sub.C():
			if e.Type == typ {
				return e
			}
			for _, f := range fail {
				if e.Type == f {
					h.t.Fatalf("got %s (%+v) while waiting for %s", e.Type, e, typ)
				}
			}
		case <-deadline:
			h.t.Fatalf("no %s event within %v", typ, timeout)
		}
	}
}

func newJob(name string) *chronos.Job {
	at := time.Now().Add(time.Hour).UTC()
	j := &chronos.Job{Name: name, RunAt: &at, TargetURL: "http://127.0.0.1:9/hook", Enabled: true}
	j.ApplyDefaults()
	return j
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestListenerPublishesNotifications(t *testing.T) {
	t.Parallel()
	h := start(t, "l-events")
	h.next(chronos.EventResync, 20*time.Second)
	if !h.l.Connected() {
		t.Fatalf("Connected() = false after resync")
	}
	ctx := ctxT(t)

	j := newJob("events")
	if err := h.db.CreateJob(ctx, j); err != nil {
		t.Fatalf("create job: %v", err)
	}
	e := h.next(chronos.EventJobChanged, 20*time.Second)
	if e.Op != "created" || e.JobID != j.ID {
		t.Fatalf("job event = %+v, want op created job_id %d", e, j.ID)
	}
	// The materializer wakes for a new job only when its first run is
	// near: the event says when that is.
	if j.NextRunAt == nil || e.NextRunAt == nil || !e.NextRunAt.Equal(*j.NextRunAt) {
		t.Fatalf("job event's next_run_at = %v, want the job's %v", e.NextRunAt, j.NextRunAt)
	}
	// A batch's jobs: one event each, each with its job's next run.
	batch := []*chronos.Job{newJob("events-b1"), newJob("events-b2")}
	*batch[1].RunAt = batch[1].RunAt.Add(time.Minute)
	if err := h.db.CreateJobs(ctx, batch); err != nil {
		t.Fatalf("create jobs: %v", err)
	}
	for range batch {
		e := h.next(chronos.EventJobChanged, 20*time.Second)
		k := slices.IndexFunc(batch, func(b *chronos.Job) bool { return b.ID == e.JobID })
		if e.Op != "created" || k < 0 || e.NextRunAt == nil || !e.NextRunAt.Equal(*batch[k].NextRunAt) {
			t.Fatalf("batch job event = %+v, want op created with the next run of one of jobs %d, %d", e, batch[0].ID, batch[1].ID)
		}
	}

	r, err := h.db.Trigger(ctx, j.ID)
	if err != nil {
		t.Fatalf("trigger: %v", err)
	}
	e = h.next(chronos.EventRunChanged, 20*time.Second)
	if e.Count != 1 || e.RunID != r.ID || e.JobID != j.ID || e.Status != chronos.StatusPending || e.AvailableAt == nil {
		t.Fatalf("run event = %+v, want count 1 run %d job %d pending with available_at", e, r.ID, j.ID)
	}
	if d := e.AvailableAt.Sub(r.AvailableAt); d < -time.Millisecond || d > time.Millisecond {
		t.Fatalf("available_at = %v, want %v", e.AvailableAt, r.AvailableAt)
	}
	if !e.WakesDispatcher() {
		t.Fatalf("a pending run event must wake the dispatcher")
	}

	if err := h.db.AnnounceResignation(ctx, "someone"); err != nil {
		t.Fatalf("announce: %v", err)
	}
	e = h.next(chronos.EventLeaderChanged, 20*time.Second)
	if e.Op != "resigned" || e.Instance != "someone" || e.Leader {
		t.Fatalf("leader event = %+v, want op resigned instance someone", e)
	}

	if err := h.db.DeleteJob(ctx, j.ID); err != nil {
		t.Fatalf("delete job: %v", err)
	}
	e = h.next(chronos.EventJobChanged, 20*time.Second)
	if e.Op != "deleted" || e.JobID != j.ID {
		t.Fatalf("job event = %+v, want op deleted job_id %d", e, j.ID)
	}
}

func TestListenerDropsMalformedPayloads(t *testing.T) {
	t.Parallel()
	h := start(t, "l-malformed")
	h.next(chronos.EventResync, 20*time.Second)
	ctx := ctxT(t)
	for _, n := range []struct{ ch, payload string }{
		{listeners.ChannelRuns, "garbage"},
		{listeners.ChannelJobs, `{"op":"created"}`},
		{listeners.ChannelLeader, `{"op":"resigned"}`},
		{listeners.ChannelLeader, `{"op":"resigned","instance":"good"}`},
	} {
		if _, err := h.db.Pool.Exec(ctx, "SELECT pg_notify($1, $2)", n.ch, n.payload); err != nil {
			t.Fatalf("notify: %v", err)
		}
	}
	// Notifications arrive in order: the first event published must be
	// the good one, the malformed ones before it having been dropped.
	select {
	case e := <-h.sub.C():
		if e.Type != chronos.EventLeaderChanged || e.Instance != "good" {
			t.Fatalf("first event = %+v, want the well-formed resignation", e)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the well-formed notification never arrived")
	}
	if !h.l.Connected() {
		t.Fatalf("malformed payloads must not disturb the connection")
	}
}

func TestListenerResyncOncePerConnect(t *testing.T) {
	t.Parallel()
	h := start(t, "l-once")
	h.next(chronos.EventResync, 20*time.Second)
	// A round trip through the server after the resync: had a second
	// resync been published for the same connection (one per channel), it
	// would have come before this notification.
	if err := h.db.AnnounceResignation(ctxT(t), "marker"); err != nil {
		t.Fatalf("announce: %v", err)
	}
	h.next(chronos.EventLeaderChanged, 20*time.Second, chronos.EventResync)
}

func TestListenerReconnects(t *testing.T) {
	t.Parallel()
	h := start(t, "l-reconnect")
	h.next(chronos.EventResync, 20*time.Second)

	for i := range 3 {
		sqltest.Terminate(t, h.db, "l-reconnect-listener") // one LISTEN connection per instance
		killed := time.Now()
		down := h.next(chronos.EventListenerDown, 20*time.Second, chronos.EventResync)
		if down.Instance != "l-reconnect" || down.Error == "" {
			t.Fatalf("down event = %+v, want instance and error", down)
		}
		h.next(chronos.EventResync, 20*time.Second, chronos.EventListenerDown)
		t.Logf("reconnect %d: down→resync %v after the kill", i+1, time.Since(killed).Round(time.Millisecond))
		if !h.l.Connected() {
			t.Fatalf("Connected() = false after resync")
		}
		// The new connection delivers notifications.
		if err := h.db.AnnounceResignation(ctxT(t), "after-reconnect"); err != nil {
			t.Fatalf("announce: %v", err)
		}
		if e := h.next(chronos.EventLeaderChanged, 20*time.Second); e.Instance != "after-reconnect" {
			t.Fatalf("leader event = %+v", e)
		}
	}
}

func TestListenerStopsWhileDisconnected(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1: every attempt fails and the listener sits
	// in its backoff, here the longest there is (at least 4s, jitter
	// included); cancel must still end Run long before that backoff would.
	b := bus.New()
	rec := recorder{msgs: make(chan string, 100)}
	l := listeners.New(listeners.Config{DSN: "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable", Instance: "l-down",
		ReconnectDelay: time.Minute}, b, slog.New(rec))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	// Wait for a failed attempt: the listener is now in its backoff.
	deadline := time.After(20 * time.Second)
	for failed := 0; failed < 1; {
		select {
		case m := <-rec.msgs:
			if m == "listener connect failed" {
				failed++
			}
		case <-deadline:
			t.Fatalf("no failed connection attempt within 20s")
		}
	}
	if l.Connected() {
		t.Fatalf("Connected() = true with no server")
	}
	cancel()
	testwait.Nil(t, done, 3*time.Second, "Run after cancel, while in a backoff of at least 4s")
}

func TestListenerBadDSN(t *testing.T) {
	t.Parallel()
	l := listeners.New(listeners.Config{DSN: "postgres://%zz", Instance: "l-bad"}, bus.New(), testlog.Verbose(t))
	err := l.Run(context.Background())
	if err == nil {
		t.Fatalf("Run with an unparsable DSN returned nil")
	}
}

func TestListenerRunTwice(t *testing.T) {
	t.Parallel()
	h := start(t, "l-twice")
	h.next(chronos.EventResync, 20*time.Second)
	if err := h.l.Run(context.Background()); err == nil || errors.Is(err, context.Canceled) {
		t.Fatalf("second concurrent Run = %v, want an error", err)
	}
}

// recorder is a slog.Handler that passes each record's message on.
type recorder struct{ msgs chan string }

func (r recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r recorder) Handle(_ context.Context, rec slog.Record) error {
	select {
	case r.msgs <- rec.Message:
	default:
	}
	return nil
}
func (r recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r recorder) WithGroup(string) slog.Handler      { return r }
