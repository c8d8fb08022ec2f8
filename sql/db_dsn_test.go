package sql_test

import (
	"context"
	"testing"
	"time"

	"github.com/chronoshq/chronos/internal/pgdsn"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// A DATABASE_URL that sizes the pool (pool_max_conns) must work for the
// unpooled connections too: migrations and the leader connection.
func TestPoolSettingsInDSN(t *testing.T) {
	t.Parallel()
	dsn := pgdsn.WithParam(sqltest.NewURL(t), "pool_max_conns", "3")
	ctx := context.Background()
	if err := sql.Migrate(ctx, dsn); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	c, err := sql.ConnectLeader(ctx, dsn, "dsn-test")
	if err != nil {
		t.Fatalf("connect leader: %v", err)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	db := sqltest.Open(t, dsn, "dsn-test")
	if got := db.Pool.Config().MaxConns; got != 3 {
		t.Fatalf("MaxConns = %d, want 3", got)
	}
}

// A connection attempt is bounded when the DSN says nothing: the pool
// builds connections on a context of its own, so an unbounded attempt
// that never gets an answer would hold a pool slot for good. A DSN's own
// connect_timeout wins.
func TestConnectTimeoutBounded(t *testing.T) {
	t.Parallel()
	url := sqltest.NewURL(t)
	for _, c := range []struct {
		dsn  string
		want time.Duration
	}{
		{url, sql.ConnectTimeout},
		{pgdsn.WithParam(url, "connect_timeout", "3"), 3 * time.Second},
	} {
		db := sqltest.Open(t, c.dsn, "dsn-test")
		if got := db.Pool.Config().ConnConfig.ConnectTimeout; got != c.want {
			t.Errorf("%s: ConnectTimeout = %s, want %s", c.dsn, got, c.want)
		}
	}
}
