package reactor

import (
	"context"
	"strings"
	"testing"

	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// benchDBs is the database of a reactor benchmark: its DSN, the pool the
// runs are created on (synchronous, like the API's) and the reactor's
// pool, which is the same one unless reactorParam ("name=value") sets the
// reactor's apart (e.g. synchronous_commit=off). Both close at cleanup.
func benchDBs(b *testing.B, reactorParam string) (dsn string, db, rdb *sql.DB) {
	dsn = sqltest.NewURL(b)
	open := func(dsn, name string) *sql.DB {
		d, err := sql.Open(context.Background(), dsn, name)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(d.Close)
		return d
	}
	db = open(dsn, "bench")
	rdb = db
	if reactorParam != "" {
		k, v, _ := strings.Cut(reactorParam, "=")
		rdb = open(sqltest.WithParam(dsn, k, v), "bench-reactor")
	}
	return dsn, db, rdb
}
