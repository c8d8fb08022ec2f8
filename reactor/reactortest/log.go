package reactortest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
)

// Logger logs warnings and errors into the test's output, everything with
// CHRONOS_TEST_LOG=debug. Outside a *testing.T (a benchmark) it discards,
// so that a timed loop does not pay for the output.
func Logger(t testing.TB) *slog.Logger {
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

// SignalOn returns a handler that passes records on to h as h would, and
// closes c the first time a record with message msg is logged, at any level
// (also one h drops): a test can wait for a state the code only logs, such
// as a Leader first failing to get the lock.
func SignalOn(h slog.Handler, msg string, c chan struct{}) slog.Handler {
	return signal{Handler: h, msg: msg, c: c, once: new(sync.Once)}
}

// signal is SignalOn's handler; the Once is shared by the handlers
// WithAttrs and WithGroup derive, so c is closed once among them all.
type signal struct {
	slog.Handler
	msg  string
	c    chan struct{}
	once *sync.Once
}

func (h signal) Enabled(context.Context, slog.Level) bool { return true }

func (h signal) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.once.Do(func() { close(h.c) })
	}
	if !h.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h signal) WithAttrs(as []slog.Attr) slog.Handler {
	h.Handler = h.Handler.WithAttrs(as)
	return h
}

func (h signal) WithGroup(name string) slog.Handler {
	h.Handler = h.Handler.WithGroup(name)
	return h
}
