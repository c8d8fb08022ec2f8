package reactortest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// maxConns caps a test pool: the tests of every package share one server,
// and its connection limit is the first thing they exhaust.
const maxConns = "pool_max_conns=8"

// OpenDB opens a pool on dsn whose sessions are named instance, capped at
// eight connections (unless dsn sets pool_max_conns), closed at cleanup.
func OpenDB(t testing.TB, dsn, instance string) *sql.DB {
	t.Helper()
	return sqltest.Open(t, limitPool(dsn), instance)
}

func limitPool(dsn string) string {
	if strings.Contains(dsn, "pool_max_conns") {
		return dsn
	}
	if strings.Contains(dsn, "?") {
		return dsn + "&" + maxConns
	}
	return dsn + "?" + maxConns
}

// OpenWarmDB opens a pool on dsn whose sessions are named app, with one
// connection open, closed at cleanup. A running instance's pool is warm
// (its dispatcher polls through it), so a leadership test's pool is too:
// a resignation notice then does not pay for a connect.
func OpenWarmDB(t testing.TB, dsn, app string) *sql.DB {
	t.Helper()
	db := sqltest.Open(t, dsn, app)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := db.Ping(ctx); err != nil {
		t.Fatalf("ping %s: %v", app, err)
	}
	return db
}

// LockHolder names the instance holding the leadership lock, as seen from
// another connection ("" when the lock is free).
func LockHolder(t testing.TB, db *sql.DB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	name, err := db.Leader(ctx)
	if err != nil {
		t.Fatalf("db.Leader: %v", err)
	}
	return name
}
