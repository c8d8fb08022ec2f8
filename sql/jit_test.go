package sql_test

import (
	"testing"

	"github.com/chronoshq/chronos/internal/pgdsn"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// A pool on a connection of its own runs with JIT off (the API's
// statements too, not only the reactors'); behind a transaction pooler it
// leaves the session alone, and a DSN that sets jit keeps its word.
func TestPoolTurnsJITOff(t *testing.T) {
	t.Parallel()
	dsn := sqltest.NewURL(t)
	ctx := t.Context()
	for _, c := range []struct {
		name   string
		dsn    string
		pooled bool
		want   string // "": the session's own (reset) value
	}{
		{"direct", dsn, false, "off"},
		{"pooled", dsn, true, ""},
		{"dsn says on", pgdsn.WithParam(dsn, "jit", "on"), false, "on"},
	} {
		db, err := sql.OpenWith(ctx, c.dsn, sql.Options{Instance: "jit", Pooled: c.pooled})
		if err != nil {
			t.Fatal(err)
		}
		var v string
		if c.want == "" {
			// A pooled session is left as the server set it up.
			if err := db.Pool.QueryRow(ctx, "SELECT reset_val FROM pg_settings WHERE name = 'jit'").Scan(&c.want); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Pool.QueryRow(ctx, "SHOW jit").Scan(&v); err != nil || v != c.want {
			t.Errorf("%s: a statement sees jit=%q (%v), want %s", c.name, v, err, c.want)
		}
		tx, err := db.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.QueryRow(ctx, "SHOW jit").Scan(&v); err != nil || v != c.want {
			t.Errorf("%s: a transaction sees jit=%q (%v), want %s", c.name, v, err, c.want)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
}
