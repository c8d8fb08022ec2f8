// Package testlog is the logger of the tests that watch a component's own
// log lines only when asked to (go test -v): the listeners' and the
// reactor's leader tests.
package testlog

import (
	"io"
	"log/slog"
	"strings"
	"testing"
)

// Verbose logs everything, debug included, into t's log under go test -v,
// and discards otherwise, so that a passing run stays quiet.
func Verbose(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(writer{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// writer hands each record to t.Log, which adds its own newline.
type writer struct{ t *testing.T }

func (w writer) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
