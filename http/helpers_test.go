package http

import (
	"context"
	"io"
	"log/slog"
	nethttp "net/http"
	"net/http/httptest"
	"testing"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/bus"
	"github.com/chronoshq/chronos/http/apitest"
	"github.com/chronoshq/chronos/internal/syncbuf"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

const testKey = "test-key-0123456789"

// env is one Server on a fresh database.
type env struct {
	t     testing.TB
	db    *sql.DB
	bus   *bus.Bus
	probe *apitest.Probe
	srv   *Server
	logs  *syncbuf.Buffer
}

func newEnv(t testing.TB, mods ...func(*Config)) *env {
	t.Helper()
	return newEnvDB(t, sqltest.New(t), mods...)
}

// parallelEnv opens most tests here: the test runs in parallel with the
// others, on an env (and a database) of its own.
func parallelEnv(t *testing.T, mods ...func(*Config)) *env {
	t.Helper()
	t.Parallel()
	return newEnv(t, mods...)
}

// parallelEnvNoDB is parallelEnv for a test that needs no database: its
// env has none.
func parallelEnvNoDB(t *testing.T) *env {
	t.Helper()
	t.Parallel()
	return newEnvDB(t, nil)
}

func newEnvDB(t testing.TB, db *sql.DB, mods ...func(*Config)) *env {
	t.Helper()
	cfg := Config{Instance: "test-1", APIKeys: []string{"other-key", testKey}, TargetPolicy: chronos.TargetPolicy{AllowPrivate: true}}
	for _, m := range mods {
		m(&cfg)
	}
	e := &env{t: t, db: db, bus: bus.New(), probe: &apitest.Probe{}, logs: &syncbuf.Buffer{}}
	e.probe.Connected.Store(true)
	log := slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.srv = NewServer(cfg, db, e.bus, e.probe, log)
	return e
}

// do sends a request through the router. body is a string, []byte, nil,
// or anything else to be marshalled as JSON.
func (e *env) do(method, path string, body any) *httptest.ResponseRecorder {
	e.t.Helper()
	return e.doKey(method, path, body, testKey)
}

func (e *env) doKey(method, path string, body any, key string) *httptest.ResponseRecorder {
	e.t.Helper()
	r := apitest.Body(e.t, body)
	req := httptest.NewRequestWithContext(context.Background(), method, path, r)
	if r != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return e.serveChecked(req)
}

// decode unmarshals a response body.
func decode[T any](t testing.TB, w *httptest.ResponseRecorder) T {
	t.Helper()
	return apitest.Decode[T](t, w.Body.Bytes())
}

// errorOf decodes an error envelope, failing when the body is not one.
func errorOf(t testing.TB, w *httptest.ResponseRecorder) *chronos.Error {
	t.Helper()
	return apitest.ErrorOf(t, w.Body.Bytes())
}

// wantStatus fails unless w has the status.
func wantStatus(t testing.TB, w *httptest.ResponseRecorder, status int) {
	t.Helper()
	if w.Code != status {
		t.Fatalf("status %d, want %d; body %s", w.Code, status, w.Body.String())
	}
}

// wantFields fails unless w is a 400 naming every field.
func wantFields(t testing.TB, w *httptest.ResponseRecorder, fields ...string) {
	t.Helper()
	wantStatus(t, w, nethttp.StatusBadRequest)
	e := errorOf(t, w)
	for _, f := range fields {
		if _, ok := e.Fields[f]; !ok {
			t.Fatalf("error does not name %q: %s", f, w.Body.String())
		}
	}
}

// cronJob is a valid create body.
func cronJob(name string) map[string]any {
	return map[string]any{"name": name, "cron_expr": "*/5 * * * *", "target_url": "http://127.0.0.1:9/hook"}
}

// createJob creates a job through the API.
func (e *env) createJob(body map[string]any) *chronos.Job {
	e.t.Helper()
	w := e.do("POST", "/v1/jobs", body)
	wantStatus(e.t, w, nethttp.StatusCreated)
	return decode[*chronos.Job](e.t, w)
}

func newRequest(method, path string, body io.Reader) *nethttp.Request {
	req := httptest.NewRequestWithContext(context.Background(), method, path, body)
	req.Header.Set("Authorization", "Bearer "+testKey)
	return req
}

func (e *env) serve(req *nethttp.Request) *httptest.ResponseRecorder {
	e.t.Helper()
	return e.serveChecked(req)
}

// sqlClosed is a DB whose pool is closed: every query fails.
func sqlClosed(t testing.TB) *sql.DB {
	db := sqltest.New(t)
	db.Pool.Close()
	return db
}
