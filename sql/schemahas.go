package sql

import (
	"context"
	"sync/atomic"
)

// schemaHas reports whether the database has what the catalogue lookup
// q (one boolean) asks about: a table or function of a migration this
// binary works with and without. Once present the answer is kept in
// *known (a migration is not undone under a running binary); until then
// every call asks again (a cheap catalogue lookup), and a failed lookup
// is "not yet".
func (db *DB) schemaHas(ctx context.Context, known *atomic.Bool, q string) bool {
	if known.Load() {
		return true
	}
	var ok bool
	if err := db.Pool.QueryRow(ctx, q).Scan(&ok); err != nil {
		return false
	}
	if ok {
		known.Store(true)
	}
	return ok
}
