// Package apitest holds the test helpers shared by the REST API's own
// tests (package http, which drive the router in process) and the ticket
// acceptance tests (tickets/tests, which call a served API over HTTP): a
// health probe the test sets, request bodies, and decoding answers and
// error envelopes. Each exists once, here.
//
// It does not import package http: that package's own tests import it, and
// Go forbids an import cycle. What needs a Server (building one, sending it
// a request) stays with each caller, which reach it differently.
//
// Like package sqltest, it is an ordinary package so that tests of several
// packages can import it; nothing outside tests should.
package apitest

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chronoshq/chronos"
)

// Probe is the Server's view of the instance (http.Probe), set by the
// test: ListenerConnected reports Connected, IsLeader reports Leader.
type Probe struct{ Connected, Leader atomic.Bool }

// ListenerConnected reports p.Connected.
func (p *Probe) ListenerConnected() bool { return p.Connected.Load() }

// IsLeader reports p.Leader.
func (p *Probe) IsLeader() bool { return p.Leader.Load() }

// Body is a request body: none for nil, a string or []byte as it is,
// anything else marshalled as JSON.
func Body(t testing.TB, body any) io.Reader {
	t.Helper()
	switch b := body.(type) {
	case nil:
		return nil
	case string:
		return strings.NewReader(b)
	case []byte:
		return bytes.NewReader(b)
	}
	j, err := json.Marshal(body)
	if err != nil {
		t.Fatalf("marshal body: %v", err)
	}
	return bytes.NewReader(j)
}

// Decode unmarshals a response body into a T.
func Decode[T any](t testing.TB, body []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
	return v
}

// ErrorOf decodes the JSON error envelope, {"error": {"code", "message",
// "fields"}}, failing the test unless body is one with a code and a message.
func ErrorOf(t testing.TB, body []byte) *chronos.Error {
	t.Helper()
	var env struct {
		Error *chronos.Error `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.Error == nil || env.Error.Code == "" || env.Error.Message == "" {
		t.Fatalf("not a JSON error envelope: %s", body)
	}
	return env.Error
}
