package sql

import (
	"context"
	"errors"
	"fmt"

	"github.com/chronoshq/chronos"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// limitColumns reads a limits row l with its state: runs leased or
// running (counted: the row's in_flight is only the claim's upper bound,
// see migration 028), whole tokens left (null without a rate), runs
// pending and due, and jobs naming it.
var limitColumns = `l.key, l.max_concurrency, l.rate, l.per_seconds,
	` + inFlightSQL("l.key") + `,
	floor(chronos_limit_tokens(l, clock_timestamp()))::integer,
	(SELECT count(*) FROM job_runs r WHERE r.limit_key = l.key AND r.status = 'pending' AND r.available_at <= now())::integer,
	(SELECT count(*) FROM jobs j WHERE j.limit_key = l.key)::integer,
	l.created_at, l.updated_at`

func scanLimit(row scanner) (*chronos.Limit, error) {
	var l chronos.Limit
	if err := row.Scan(&l.Key, &l.MaxConcurrency, &l.Rate, &l.PerSeconds, &l.InFlight, &l.TokensLeft,
		&l.Waiting, &l.Jobs, &l.CreatedAt, &l.UpdatedAt); err != nil {
		return nil, err
	}
	l.CreatedAt, l.UpdatedAt = l.CreatedAt.UTC(), l.UpdatedAt.UTC()
	return &l, nil
}

func limitNotFound(key string) error {
	return chronos.Errorf(chronos.ENOTFOUND, "limit %q not found", key)
}

// PutLimit creates or replaces the limit l.Key (its settings; its state
// carries on) and reports whether it was created. A new bucket starts
// full; a lowered rate caps the tokens left. Raising a limit releases the
// runs held for it that now have room at once.
func (db *DB) PutLimit(ctx context.Context, l *chronos.Limit) (created bool, err error) {
	if err := l.Validate(); err != nil {
		return false, err
	}
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("put limit: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	err = tx.QueryRow(ctx, `
		INSERT INTO limits AS l (key, max_concurrency, rate, per_seconds, tokens)
		VALUES ($1, $2, $3, $4, coalesce($3, 0))
		ON CONFLICT (key) DO UPDATE
		   SET max_concurrency = excluded.max_concurrency, rate = excluded.rate,
		       per_seconds = excluded.per_seconds,
		       tokens = CASE WHEN excluded.rate IS NULL THEN 0
		                     WHEN l.rate IS NULL THEN excluded.rate
		                     ELSE least(chronos_limit_tokens(l, clock_timestamp()), excluded.rate) END,
		       refilled_at = clock_timestamp(), updated_at = now()
		RETURNING xmax = 0`, l.Key, l.MaxConcurrency, l.Rate, l.PerSeconds).Scan(&created)
	if err != nil {
		return false, mapErr(err, "put limit")
	}
	// Before migration 034 the release below works from the row's bound:
	// the key's runs in flight, counted under its lock by a statement
	// that starts after it was taken (so no lease is missing). Runs
	// leased under the key before it was declared (again: its jobs moved
	// off it, the limit deleted and put back) count at once. From 034 on
	// every claim and release counts them itself.
	if !db.LimitsCounted(ctx) {
		if _, err := tx.Exec(ctx, `
			UPDATE limits SET in_flight = `+inFlightSQL028("$1::text")+`
			 WHERE key = $1`, l.Key); err != nil {
			return false, mapErr(err, "put limit: count runs in flight")
		}
	}
	if _, err := tx.Exec(ctx, "SELECT chronos_limit_release(ARRAY[$1::text], ARRAY[1000000])", l.Key); err != nil {
		return false, mapErr(err, "put limit: release held runs")
	}
	if err := tx.Commit(ctx); err != nil {
		return false, mapErr(err, "put limit")
	}
	got, err := db.Limit(ctx, l.Key)
	if err != nil {
		return created, err
	}
	*l = *got
	return created, nil
}

// Limit returns one limit with its state, or ENOTFOUND.
func (db *DB) Limit(ctx context.Context, key string) (*chronos.Limit, error) {
	l, err := scanLimit(db.Pool.QueryRow(ctx, "SELECT "+limitColumns+" FROM limits l WHERE l.key = $1", key))
	if err != nil {
		return nil, lookupErr(err, limitNotFound(key), "get limit")
	}
	return l, nil
}

// Limits returns every declared limit with its state, in key order. The
// keys are declared by operators, so there are few.
func (db *DB) Limits(ctx context.Context) ([]*chronos.Limit, error) {
	rows, err := db.Pool.Query(ctx, "SELECT "+limitColumns+" FROM limits l ORDER BY l.key")
	return collect(rows, err, "list limits", scanLimit)
}

// DeleteLimit deletes a limit no job names; ECONFLICT while one does,
// ENOTFOUND when there is none. Runs created under it that wait are
// released: with its limit gone, the key limits nothing.
func (db *DB) DeleteLimit(ctx context.Context, key string) error {
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("delete limit: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	tag, err := tx.Exec(ctx, "DELETE FROM limits WHERE key = $1", key)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23503" {
		var n int
		_ = db.Pool.QueryRow(ctx, "SELECT count(*) FROM jobs WHERE limit_key = $1", key).Scan(&n)
		return &chronos.Error{Code: chronos.ECONFLICT,
			Message: fmt.Sprintf("limit %q is named by %d job(s): clear their limit_key first", key, n)}
	}
	if err != nil {
		return mapErr(err, "delete limit")
	}
	if tag.RowsAffected() == 0 {
		return limitNotFound(key)
	}
	if _, err := tx.Exec(ctx, `
		UPDATE job_runs SET held = false, limit_held = false
		 WHERE limit_key = $1 AND limit_held AND held AND status = 'pending'`, key); err != nil {
		return mapErr(err, "delete limit: release held runs")
	}
	return mapErr(tx.Commit(ctx), "delete limit")
}

// ReleaseLimitedRuns releases, for every declared key with held runs, as
// many as it has room for now (free slots and whole tokens) and returns
// how many. It counts each such key's runs in flight first, under the
// key's lock (chronos_limit_release, migration 028). A completion
// releases a held run for each run it finishes; this is what releases
// runs a refilled bucket allows, or a slot freed by a run that left any
// other way (a release at shutdown, the reaper, a deferral, a deleted
// job), and a safety net for the rest. The leader calls it a few times a
// second.
func (db *DB) ReleaseLimitedRuns(ctx context.Context) (int, error) {
	rows, err := db.Pool.Query(ctx, "SELECT key FROM limits WHERE held > 0 ORDER BY key")
	keys, err := collect(rows, err, "release limited runs", scanOne[string])
	if err != nil || len(keys) == 0 {
		return 0, err
	}
	// Before migration 034, each key's bound is set to a count first, in
	// a transaction of its own: one key's lock at a time, and no run
	// locked while it is held (the claim takes runs, then keys: see
	// chronos_limit_release). From 034 on the release counts.
	if !db.LimitsCounted(ctx) {
		for _, k := range keys {
			if err := db.countInFlight(ctx, k); err != nil {
				return 0, err
			}
		}
	}
	want := make([]int32, len(keys))
	for i := range want {
		want[i] = 1000000
	}
	var n int
	if err := db.Pool.QueryRow(ctx, "SELECT chronos_limit_release($1::text[], $2::integer[])", keys, want).Scan(&n); err != nil {
		return 0, mapErr(err, "release limited runs")
	}
	return n, nil
}

// countInFlight sets key's in_flight to its runs leased or running, in a
// transaction of its own: the row is locked first, and counted by a
// statement that starts after the lock was granted (a statement's
// snapshot is taken when it starts: an UPDATE counting in its own SET
// would miss a claim that committed while it waited for the row).
func (db *DB) countInFlight(ctx context.Context, key string) error {
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("count runs in flight: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	if _, err := tx.Exec(ctx, "SELECT 1 FROM limits WHERE key = $1 FOR UPDATE", key); err != nil {
		return mapErr(err, "count runs in flight")
	}
	if _, err := tx.Exec(ctx, `UPDATE limits SET in_flight = `+inFlightSQL028("$1::text")+`
		 WHERE key = $1 AND in_flight IS DISTINCT FROM `+inFlightSQL028("$1::text"), key); err != nil {
		return mapErr(err, "count runs in flight")
	}
	return mapErr(tx.Commit(ctx), "count runs in flight")
}

// RecountLimits sets each key's held hint to the runs held for it and,
// before migration 034, its in_flight bound to the runs of the key leased
// or running; it returns the keys whose row said less than the runs: a
// hint (or bound) broken by a hand-written statement (or a key re-created
// while its runs waited), which could have left held runs unreleased (or
// let the claim through more runs). A row saying more is the normal state
// (claims add to it, releases infer what they take off) and is set right
// quietly. Each key is counted under its row's lock, by a statement that
// starts after the lock is taken, so it sees every committed claim.
func (db *DB) RecountLimits(ctx context.Context) ([]string, error) {
	rows, err := db.Pool.Query(ctx, "SELECT key FROM limits ORDER BY key")
	keys, err := collect(rows, err, "recount limits", scanOne[string])
	if err != nil {
		return nil, err
	}
	counted := db.LimitsCounted(ctx)
	var fixed []string
	for _, k := range keys {
		changed, err := db.recountLimit(ctx, k, counted)
		if err != nil {
			return fixed, err
		}
		if changed {
			fixed = append(fixed, k)
		}
	}
	return fixed, nil
}

// recountLimit recounts key (see RecountLimits); counted: the database
// counts runs in flight (migration 034), so only the held hint is kept.
func (db *DB) recountLimit(ctx context.Context, key string, counted bool) (bool, error) {
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("recount limit: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	var had, hadHeld int
	if err := tx.QueryRow(ctx, "SELECT in_flight, held FROM limits WHERE key = $1 FOR UPDATE", key).Scan(&had, &hadHeld); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil
		}
		return false, mapErr(err, "recount limit")
	}
	var now, held int
	if err := tx.QueryRow(ctx, `SELECT `+inFlightSQL("$1::text")+`,
		       (SELECT count(*) FROM job_runs WHERE limit_key = $1 AND limit_held AND held AND status = 'pending')::integer`,
		key).Scan(&now, &held); err != nil {
		return false, mapErr(err, "recount limit")
	}
	if counted {
		now = had // not kept: see migration 034
	}
	if now == had && held == hadHeld {
		return false, nil
	}
	if _, err := tx.Exec(ctx, "UPDATE limits SET in_flight = $2, held = $3 WHERE key = $1", key, now, held); err != nil {
		return false, mapErr(err, "recount limit")
	}
	return had < now || hadHeld < held, mapErr(tx.Commit(ctx), "recount limit")
}

// relimit moves the pending runs of job id to its new limit key when a
// PATCH changed it (runs in flight keep the key they were leased under,
// which their completion gives back), releasing those held for the old
// key: the claim decides again under the new one.
func relimit(ctx context.Context, tx pgx.Tx, id int64, before, after *string) error {
	if (before == nil) == (after == nil) && (before == nil || *before == *after) {
		return nil
	}
	if after != nil {
		// The key must name a limit: a clear 400 naming it, not the
		// foreign key's (which still guards a delete racing this).
		var n int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM limits WHERE key = $1", *after).Scan(&n); err != nil {
			return mapErr(err, "update job: check its limit")
		}
		if n == 0 {
			return unknownLimitKey(*after)
		}
	}
	_, err := tx.Exec(ctx, `
		UPDATE job_runs SET limit_key = $2, held = held AND NOT limit_held, limit_held = false
		 WHERE job_id = $1 AND status = 'pending'`, id, after)
	return mapErr(err, "update job: move its pending runs to the new limit")
}

// checkLimitKeys sets errs[i] for each prepared job that names a key with
// no limit, so one such job fails itself, not the batch it is written in.
func checkLimitKeys(ctx context.Context, q querier, jobs []preparedJob, errs map[int]error) error {
	var keys []string
	for i, p := range jobs {
		if errs[i] == nil && p.j != nil && p.j.LimitKey != nil {
			keys = append(keys, *p.j.LimitKey)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	rows, err := q.Query(ctx, "SELECT key FROM limits WHERE key = ANY($1)", keys)
	found, err := collect(rows, err, "check limit keys", scanOne[string])
	if err != nil {
		return err
	}
	known := make(map[string]bool, len(found))
	for _, k := range found {
		known[k] = true
	}
	for i, p := range jobs {
		if errs[i] == nil && p.j != nil && p.j.LimitKey != nil && !known[*p.j.LimitKey] {
			errs[i] = unknownLimitKey(*p.j.LimitKey)
		}
	}
	return nil
}

// checkLimitKey is checkLimitKeys for one job outside a batch.
func (db *DB) checkLimitKey(ctx context.Context, j *chronos.Job) error {
	errs := map[int]error{}
	if err := checkLimitKeys(ctx, db.Pool, []preparedJob{{j: j}}, errs); err != nil {
		return err
	}
	return errs[0]
}

// unknownLimitKey is the 400 of a job naming a key no limit has.
func unknownLimitKey(key string) error {
	return &chronos.Error{Code: chronos.EINVALID, Message: fmt.Sprintf("invalid limit_key: no limit %q", key),
		Fields: map[string]string{"limit_key": fmt.Sprintf("no limit %q: create it first (PUT /v1/limits/%s)", key, key)}}
}
