package sqltest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Querier is what Map reads through: a connection, a pool or a
// transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Map returns the rows of query, each a key and its value, as a map
// (pgx collects rows into slices only); it fails t on any error.
func Map[K comparable, V any](t testing.TB, ctx context.Context, q Querier, query string, args ...any) map[K]V {
	t.Helper()
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	out := map[K]V{}
	for rows.Next() {
		var k K
		var v V
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		out[k] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return out
}
