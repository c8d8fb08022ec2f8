package sql

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// A worker marks its run running in one of two ways:
//   - StartAhead, for the runs one claim took ahead of one instant, just
//     before that instant (the runs are not sent unless it marked them);
//   - Start or StartMany, for a delivery still in flight a moment after
//     its request went out: the run shows as running, and the attempt's
//     row exists while the call lasts. A call that ends sooner is
//     recorded by Complete alone.
//
// Each is fenced on the leases (fenceEach): a run whose lease is gone is
// left out of what they return.

// StartAhead marks runs claimed ahead of their instant running, each
// fenced on its lease, in one statement: the workers of one claim's runs
// due at one instant call it once, shortly before the instant, and each
// sends its run only if it is among those returned (a herd's hundred runs
// claimed ahead were a hundred statements queueing for the pool at the
// very instant they were due). A run left out is gone or no longer this
// worker's: a pause or schedule change deletes runs claimed ahead that
// are still only leased (see UpdateJob), waiting for a StartAhead in
// flight, so once the API has answered the change no run of the old plan
// is sent. It creates no run_attempts row: Start and Complete do, as for
// any other run.
func (db *DB) StartAhead(ctx context.Context, leases []Lease) (started map[int64]bool, err error) {
	return db.startEach(ctx, startAheadSQL, "start runs ahead", leases)
}

// startAheadSQL is StartAhead's statement: fenceEach for each lease of
// the arrays $1 (run ids), $2 (workers), $3 (attempts), $4 (scheduled_at).
const startAheadSQL = `
	UPDATE job_runs r SET status = 'running', started_at = COALESCE(r.started_at, now())
	  FROM unnest($1::bigint[], $2::text[], $3::int[], $4::timestamptz[]) AS o(run_id, worker, attempt, scheduled_at)
	 WHERE ` + fenceEach + `
	RETURNING r.id`

// StartMany marks the leased runs of leases running and records each
// attempt's start, in one statement, and returns the runs it marked: a
// run left out lost its lease. The attempt's row in run_attempts is born
// here (started_at = now()); starting twice is harmless, the second finds
// the row and keeps it.
//
// One statement for many deliveries is what keeps slow targets cheap:
// every call still in flight after a moment is started, and against
// targets that take 50 ms each start, written on its own, cost Postgres
// several times what the claim and the completion of the run did
// together (docs/performance.md, session 22).
func (db *DB) StartMany(ctx context.Context, leases []Lease) (started map[int64]bool, err error) {
	return db.startEach(ctx, startSQL, "start runs", leases)
}

// startSQL is StartMany's statement, on startAheadSQL's arguments.
const startSQL = `
	WITH started AS (
		UPDATE job_runs r SET status = 'running', started_at = COALESCE(r.started_at, now())
		  FROM unnest($1::bigint[], $2::text[], $3::int[], $4::timestamptz[]) AS o(run_id, worker, attempt, scheduled_at)
		 WHERE ` + fenceEach + `
		RETURNING r.id, r.attempt_count, r.leased_by
	), attempt AS (
		INSERT INTO run_attempts (run_id, attempt, worker_id, started_at)
		SELECT id, attempt_count, leased_by, now() FROM started
		ON CONFLICT (run_id, attempt) DO NOTHING
	)
	SELECT id FROM started`

// Start is StartMany of one lease: ErrLeaseLost when the lease is gone.
func (db *DB) Start(ctx context.Context, l Lease) error {
	started, err := db.StartMany(ctx, []Lease{l})
	n := int64(0)
	if started[l.RunID] {
		n = 1
	}
	return fenced(l, n, err, "start run", "start run %d attempt %d")
}

// startEach runs q, a statement on the arrays of leases (fenceEach) that
// returns the ids it wrote, and collects them; what names the statement
// in an error. The leases go in run id order, so that two statements
// that lock some of the same runs lock them in the same order.
func (db *DB) startEach(ctx context.Context, q, what string, leases []Lease) (map[int64]bool, error) {
	sorted := slices.SortedFunc(slices.Values(leases), func(a, b Lease) int { return cmp.Compare(a.RunID, b.RunID) })
	ids := make([]int64, len(sorted))
	workers := make([]string, len(sorted))
	attempts := make([]int32, len(sorted))
	sched := make([]time.Time, len(sorted))
	for i, l := range sorted {
		ids[i], workers[i], attempts[i], sched[i] = l.RunID, l.Worker, int32(l.Attempt), l.ScheduledAt
	}
	rows, err := db.Pool.QueryPlannedOnce(ctx, q, ids, workers, attempts, sched)
	if err != nil {
		return nil, mapErr(err, what)
	}
	started := make(map[int64]bool, len(leases))
	var id int64
	if _, err = pgx.ForEachRow(rows, []any{&id}, func() error { started[id] = true; return nil }); err != nil {
		return nil, mapErr(err, what)
	}
	return started, nil
}
