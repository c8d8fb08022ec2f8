package main

import (
	"context"
	"io"
	"log/slog"
)

// newLogger returns the process logger: JSON for machines, text for people.
// Durations are written as Go durations ("3s", "1.5ms") in both formats,
// not as JSON integers of nanoseconds; and a key bound twice on the way down
// (component=reactor, then component=leader for the leader's lines) appears
// once, with its latest value.
func newLogger(w io.Writer, level slog.Level, format string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: durationsAsStrings}
	var h slog.Handler = slog.NewJSONHandler(w, opts)
	if format == "text" {
		h = slog.NewTextHandler(w, opts)
	}
	return slog.New(&dedupHandler{inner: h})
}

// durationsAsStrings is a ReplaceAttr: a time.Duration becomes its String.
func durationsAsStrings(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}

// dedupHandler keeps the attributes bound with Logger.With to itself until
// a record is written, so that a key bound again (or repeated in the
// record) replaces the earlier value instead of being written twice, which
// slog's own handlers do and which makes JSON lines ambiguous. Groups end
// the deduplication scope: attributes bound before a group are handed to
// the inner handler as they are.
type dedupHandler struct {
	inner slog.Handler
	attrs []slog.Attr
}

// Enabled implements slog.Handler.
func (h *dedupHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

// WithAttrs implements slog.Handler.
func (h *dedupHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &dedupHandler{inner: h.inner, attrs: mergeAttrs(h.attrs, as)}
}

// WithGroup implements slog.Handler.
func (h *dedupHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	inner := h.inner
	if len(h.attrs) > 0 {
		inner = inner.WithAttrs(h.attrs)
	}
	return &dedupHandler{inner: inner.WithGroup(name)}
}

// Handle implements slog.Handler.
func (h *dedupHandler) Handle(ctx context.Context, r slog.Record) error {
	if len(h.attrs) == 0 {
		return h.inner.Handle(ctx, r)
	}
	own := make([]slog.Attr, 0, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool {
		own = append(own, a)
		return true
	})
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	out.AddAttrs(mergeAttrs(h.attrs, own)...)
	return h.inner.Handle(ctx, out)
}

// mergeAttrs returns base followed by more, where an attribute of more
// whose key is already present replaces it in place.
func mergeAttrs(base, more []slog.Attr) []slog.Attr {
	out := make([]slog.Attr, len(base), len(base)+len(more))
	copy(out, base)
next:
	for _, a := range more {
		for i := range out {
			if out[i].Key == a.Key {
				out[i] = a
				continue next
			}
		}
		out = append(out, a)
	}
	return out
}
