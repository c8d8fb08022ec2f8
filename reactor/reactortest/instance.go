package reactortest

import (
	"cmp"
	"context"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/bus"
	"github.com/chronoshq/chronos/listeners"
	"github.com/chronoshq/chronos/sql"
)

// Instance is one Chronos instance in a test: its own pool, bus and
// logger, and what the test runs on them (a listener, a reactor), stopped
// at cleanup or by Stop.
type Instance struct {
	Name     string
	DB       *sql.DB
	Bus      *bus.Bus
	Log      *slog.Logger        // for what runs on the instance
	Listener *listeners.Listener // set by StartListener

	stops []func() error // the latest started first
	once  sync.Once
	err   error
}

// NewInstance returns an instance named name (a unique name when empty)
// with a capped pool on dsn (see OpenDB) and a bus, running nothing yet.
// It is stopped at cleanup; an error stopping it fails the test.
func NewInstance(t testing.TB, dsn, name string) *Instance {
	t.Helper()
	if name == "" {
		name = "test-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	in := &Instance{Name: name, DB: OpenDB(t, dsn, name), Bus: bus.New(), Log: Logger(t)}
	t.Cleanup(func() {
		if err := in.Stop(); err != nil {
			t.Errorf("instance %s: %v", name, err)
		}
	})
	return in
}

// Go runs fn (a Run method) in the background until Stop. Stop stops what
// Go started in reverse order, as cmd does: a reactor started after its
// listener stops before it.
func (in *Instance) Go(fn func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	stop := func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			return context.DeadlineExceeded
		}
	}
	in.stops = append([]func() error{stop}, in.stops...)
}

// Stop cancels what the instance runs and waits for each to return (up to
// 30s each), once; it returns the first error.
func (in *Instance) Stop() error {
	in.once.Do(func() {
		for _, stop := range in.stops {
			if err := stop(); err != nil && in.err == nil {
				in.err = err
			}
		}
	})
	return in.err
}

// ReconnectDelay is a test listener's reconnect delay unless its test sets
// one: a killed connection is back within the test's patience.
const ReconnectDelay = 50 * time.Millisecond

// StartListener runs a listener for the instance onto its bus, with
// reconnectDelay (ReconnectDelay when 0), and waits until it is connected,
// so that no NOTIFY sent afterwards is missed.
func (in *Instance) StartListener(t testing.TB, dsn string, reconnectDelay time.Duration) *listeners.Listener {
	t.Helper()
	cfg := listeners.Config{DSN: dsn, Instance: in.Name, ReconnectDelay: cmp.Or(reconnectDelay, ReconnectDelay)}
	in.Listener = listeners.New(cfg, in.Bus, in.Log)
	in.Go(in.Listener.Run)
	Eventually(t, 20*time.Second, "listener connected", in.Listener.Connected)
	return in.Listener
}

// StartListener runs a listener named name onto b (another instance's bus)
// until cleanup, and waits until it is connected.
func StartListener(t testing.TB, dsn, name string, b *bus.Bus) *listeners.Listener {
	t.Helper()
	in := &Instance{Name: name, Bus: b, Log: Logger(t)}
	t.Cleanup(func() {
		if err := in.Stop(); err != nil {
			t.Errorf("listener %s: %v", name, err)
		}
	})
	return in.StartListener(t, dsn, 0)
}

// Trigger enqueues a manual run of the job and publishes it on the
// instance's bus, as the API's trigger endpoint does.
func (in *Instance) Trigger(t testing.TB, jobID int64) *chronos.Run {
	t.Helper()
	run := in.TriggerSilently(t, jobID)
	at := run.AvailableAt
	in.Bus.Publish(chronos.Event{Type: chronos.EventRunChanged, RunID: run.ID, JobID: jobID, Status: chronos.StatusPending, AvailableAt: &at})
	return run
}

// TriggerSilently enqueues a manual run without publishing it: only the
// database's NOTIFY can tell anyone.
func (in *Instance) TriggerSilently(t testing.TB, jobID int64) *chronos.Run {
	t.Helper()
	run, err := in.DB.Trigger(context.Background(), jobID)
	if err != nil {
		t.Fatalf("trigger job %d: %v", jobID, err)
	}
	return run
}
