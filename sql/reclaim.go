package sql

import (
	"context"

	"github.com/chronoshq/chronos"
)

// ReclaimResult says what one Reclaim call did.
type ReclaimResult struct {
	Reclaimed int // back to pending
	Dead      int // attempts exhausted, dead with "lease expired"
}

// reclaimSQL takes expired leases back in one statement. The candidates
// are locked (SKIP LOCKED: a worker mid-write keeps its row) and the
// expiry is checked again in the UPDATE itself, so a lease renewed after
// the candidate scan is never taken: only leased_until < now() at update
// time counts. The lost attempt counts toward max_retries; its attempt row
// is finished (or created, if the worker never started) with the
// lease-expired error, so a dead run still explains every attempt.
//
// A reclaimed run is available at once: the expired lease already kept it
// waiting a lease's length.
//
// An end is never put before its start. now() is when the reaper's
// transaction began, and a worker's start (StartMany) may have begun
// after it and committed before the reaper reached the run: the run
// (running, its lease still expired) is reclaimed all the same, and its
// started_at is later than the reaper's now(). The end is the later of
// the two (found by the faults model: a leader frozen with a delivery in
// flight, its reaper and its worker's start both due when it resumed).
var reclaimSQL = `
	WITH expired AS (
		SELECT id, leased_by, attempt_count FROM job_runs
		 WHERE status IN ('leased', 'running') AND leased_until < now()
		 ORDER BY leased_until
		 LIMIT $1
		   FOR UPDATE SKIP LOCKED
	), freed AS (
		UPDATE job_runs r
		   SET status = CASE WHEN r.attempt_count >= j.max_retries + 1 THEN 'dead' ELSE 'pending' END,
		       available_at = now(),
		       finished_at = CASE WHEN r.attempt_count >= j.max_retries + 1 THEN greatest(now(), r.started_at) END,
		       leased_by = NULL, leased_until = NULL,
		       last_error = $2, last_status_code = NULL
		  FROM expired e, jobs j
		 WHERE r.id = e.id AND j.id = r.job_id
		   AND r.status IN ('leased', 'running') AND r.leased_until < now()
		RETURNING r.id, r.status
	), recorded AS (
		INSERT INTO run_attempts AS a (run_id, attempt, worker_id, started_at, finished_at, error)
		SELECT e.id, e.attempt_count, e.leased_by, now(), now(), $2
		  FROM expired e JOIN freed t ON t.id = e.id
		ON CONFLICT (run_id, attempt) DO UPDATE
		   SET finished_at = greatest(now(), a.started_at), error = $2,
		       duration_ms = round(extract(epoch FROM greatest(now(), a.started_at) - a.started_at) * 1000)
		 WHERE a.finished_at IS NULL
	)
	SELECT count(*) FILTER (WHERE status = 'pending'), count(*) FILTER (WHERE status = 'dead') FROM freed`

// Reclaim takes back up to limit leased/running runs whose leased_until has
// passed (re-checked at update time). The lost attempt counts: a run with
// attempts left is pending again, one without is dead with
// chronos.LeaseExpiredError.
func (db *DB) Reclaim(ctx context.Context, limit int) (ReclaimResult, error) {
	var r ReclaimResult
	if limit <= 0 {
		return r, nil
	}
	if err := db.Pool.QueryRow(ctx, reclaimSQL, limit, chronos.LeaseExpiredError).Scan(&r.Reclaimed, &r.Dead); err != nil {
		return ReclaimResult{}, mapErr(err, "reclaim expired leases")
	}
	return r, nil
}
