package sql

import "context"

// LimitsCounted reports whether the database counts limits under the
// key's lock (migration 034, function chronos_limit_counts): then the
// claim writes no key row for a key with only a cap, and nothing keeps
// the rows' in_flight. Before it (a rolling upgrade's new instance whose
// migrations are still to run), this binary claims, releases and puts
// limits as the release before did, keeping that bound.
func (db *DB) LimitsCounted(ctx context.Context) bool {
	return db.schemaHas(ctx, &db.counted, `SELECT to_regprocedure('chronos_limit_counts(text[])') IS NOT NULL`)
}
