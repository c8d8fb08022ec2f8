package sql

import "context"

// HostCounts is how many origins hold their runs back now, by why: the
// cluster-wide figures of the hosts table behind the chronos_host_*
// gauges of /metrics. An origin may be in both.
type HostCounts struct {
	// BreakersOpen: origins whose breaker is open or probing (its
	// cooldown over, its probe due or in flight).
	BreakersOpen int
	// Deferred: origins whose Retry-After deferral has not ended.
	Deferred int
}

// HostCounts counts the origins that hold runs back now, by the
// database's clock (the one every hold is written in): one statement over
// the hosts table, a row per origin that ever deferred runs or failed.
// It is read at scrape time, so a count is never older than the scrape.
func (db *DB) HostCounts(ctx context.Context) (HostCounts, error) {
	var c HostCounts
	if err := db.Pool.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE opened_at IS NOT NULL),
		       count(*) FILTER (WHERE deferred_until > now())
		  FROM hosts`).Scan(&c.BreakersOpen, &c.Deferred); err != nil {
		return c, mapErr(err, "count held hosts")
	}
	return c, nil
}
