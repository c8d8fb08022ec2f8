// Package apiserver serves the real REST API (router, auth, the sql
// layer) over real HTTP on a test's database, for the tests that call it
// from outside: the client's and the CLI's. It is the one place those
// tests build a Server; nothing outside tests should import it.
package apiserver

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/bus"
	chttp "github.com/chronoshq/chronos/http"
	"github.com/chronoshq/chronos/http/apitest"
	"github.com/chronoshq/chronos/sql"
)

// Start serves the API of db as instance, with key its only API key and
// private targets allowed (the tests' targets are on 127.0.0.1), until
// the test ends.
func Start(t testing.TB, db *sql.DB, instance, key string) *httptest.Server {
	t.Helper()
	probe := &apitest.Probe{}
	probe.Connected.Store(true)
	srv := chttp.NewServer(chttp.Config{Instance: instance, APIKeys: []string{key}, TargetPolicy: chronos.TargetPolicy{AllowPrivate: true}},
		db, bus.New(), probe, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts
}
