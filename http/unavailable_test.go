package http

import (
	"context"
	"encoding/json"
	nethttp "net/http"
	"testing"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// A database that cannot be reached is a 503 the client may retry, never
// a 500 ("a 500 is a bug").
func TestDatabaseUnreachableIs503(t *testing.T) {
	t.Parallel()
	proxy, dsn := sqltest.NewProxyFor(t, sqltest.NewURL(t))
	db, err := sql.Open(context.Background(), dsn, "unavailable-test")
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(db.Close)
	e := newEnvDB(t, db)
	if w := e.do("GET", "/v1/jobs", nil); w.Code != nethttp.StatusOK {
		t.Fatalf("before the cut: %d %s", w.Code, w.Body)
	}
	proxy.Cut()
	for _, r := range []struct{ method, path string }{
		{"GET", "/v1/jobs"},
		{"POST", "/v1/jobs/1/trigger"},
		{"GET", "/v1/runs/1"},
	} {
		w := e.do(r.method, r.path, nil)
		if w.Code != nethttp.StatusServiceUnavailable {
			t.Fatalf("%s %s during the cut: %d %s, want 503", r.method, r.path, w.Code, w.Body)
		}
		var env struct{ Error chronos.Error }
		if err := json.Unmarshal(w.Body.Bytes(), &env); err != nil || env.Error.Code != chronos.EUNAVAILABLE {
			t.Fatalf("%s %s: body %s, want code unavailable", r.method, r.path, w.Body)
		}
		if w.Header().Get("Retry-After") == "" {
			t.Fatalf("%s %s: no Retry-After", r.method, r.path)
		}
	}
	proxy.Restore()
	proxy.Accept()
}
