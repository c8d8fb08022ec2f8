package sql

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Postponement hands a claimed run back because its origin is slow on
// this instance (the reactor's bulkhead: a slow origin may not take the
// worker slots kept for the others). Nothing was sent: the attempt is
// undone, as Release undoes it, and does not count as a deferral either.
type Postponement struct {
	Lease
	Origin string
	// Delay: the run, and every other pending run of Origin due sooner,
	// is due again Delay from now, by the database's clock.
	Delay time.Duration
	// Alone: move this run only (the origin's other runs were moved a
	// moment ago by the same instance).
	Alone bool
}

// PostponeResult is what Postpone did.
type PostponeResult struct {
	Until time.Time // when the run is due again
	Moved int       // other pending runs of the origin moved there too
}

// Postpone hands a leased run back to pending, uncounted, due p.Delay from
// now, and moves the pending runs of its origin due sooner to then
// (spread in their order, as a hold moves them; see moveRuns), in one
// transaction fenced on the lease. Moving the origin's other runs is what
// keeps the claim cheap while the origin is slow: without it the claim
// would hand this instance the origin's waiting runs one after another,
// only for each to be postponed in turn. The origin's host row, if any,
// is not written (pushed_until aside): a postponement is this instance's
// view of its own slots, not the host's state. ErrLeaseLost when the
// lease is gone.
func (db *DB) Postpone(ctx context.Context, p Postponement) (PostponeResult, error) {
	var res PostponeResult
	if p.Origin == "" {
		return res, errors.New("postpone run: no origin")
	}
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		return res, mapErr(err, "postpone run")
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	err = tx.QueryRow(ctx, handBackSQL(`,
			       available_at = greatest(available_at, now() + $5::bigint * interval '1 microsecond')`, "", "available_at"),
		fenceArgs(p.Lease, micros(max(p.Delay, 0)))...).Scan(&res.Until)
	if errors.Is(err, pgx.ErrNoRows) {
		return res, fmt.Errorf("postpone run %d attempt %d: %w", p.RunID, p.Attempt, ErrLeaseLost)
	}
	if err != nil {
		return res, mapErr(err, "postpone run")
	}
	if !p.Alone {
		if res.Moved, err = moveRuns(ctx, tx, p.Origin, res.Until, &p.RunID, res.Until, 0); err != nil {
			return res, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return res, mapErr(err, "postpone run")
	}
	return res, nil
}
