package sql

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// misfire "all" delivers every missed occurrence of a gap flagged as a
// catch-up and in order, one after another for the job: the next catch-up
// run is not claimable before the previous one has finished (succeeded,
// dead or missed; a retry keeps it active). job_schedules.catch_up_at is
// the scheduled instant of the one catch-up run that may run; the claim
// holds back the job's catch-up runs scheduled after it (claimableSQL),
// and each materializer call moves it on once that run has finished
// (advanceCatchUps). Other runs of the job are not held.

// startCatchUps flags as catch-ups the runs of the misfire "all" jobs with
// a gap that were created before it (pending, their instant past: they
// are among the missed occurrences), and starts each job's chain at its
// earliest catch-up run, unless one is already in progress.
func startCatchUps(ctx context.Context, tx pgx.Tx, jobs []int64, now time.Time) error {
	if len(jobs) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `
		UPDATE job_runs SET catch_up = true
		 WHERE job_id = ANY($1) AND trigger = 'schedule' AND status = 'pending'
		   AND scheduled_at <= $2 AND NOT catch_up`, jobs, now)
	if err != nil {
		return mapErr(err, "materialize: flag runs created before a gap")
	}
	_, err = tx.Exec(ctx, `
		UPDATE job_schedules s
		   SET catch_up_at = coalesce(s.catch_up_at,
		           (SELECT min(r.scheduled_at) FROM job_runs r
		             WHERE r.job_id = s.job_id AND r.trigger = 'schedule' AND r.catch_up AND r.status = 'pending'))
		 WHERE s.job_id = ANY($1)`, jobs)
	return mapErr(err, "materialize: start catch-ups")
}

// advanceCatchUpsSQL moves catch_up_at of up to $1 jobs whose current
// catch-up run has finished (or is gone) to their next pending catch-up
// run, or to null when none is left, and touches that run so that its
// NOTIFY wakes the dispatchers now (its available_at has passed already).
const advanceCatchUpsSQL = `
	WITH cur AS (
		SELECT s.job_id, s.catch_up_at FROM job_schedules s
		 WHERE s.catch_up_at IS NOT NULL
		   AND NOT EXISTS (SELECT 1 FROM job_runs r
		                    WHERE r.job_id = s.job_id AND r.trigger = 'schedule' AND r.scheduled_at = s.catch_up_at
		                      AND r.status IN ('pending', 'leased', 'running'))
		 ORDER BY s.job_id
		 LIMIT $1
		   FOR UPDATE OF s SKIP LOCKED
	), nxt AS (
		SELECT cur.job_id,
		       (SELECT min(r.scheduled_at) FROM job_runs r
		         WHERE r.job_id = cur.job_id AND r.trigger = 'schedule' AND r.catch_up
		           AND r.status = 'pending' AND r.scheduled_at > cur.catch_up_at) AS at
		  FROM cur
	), moved AS (
		UPDATE job_schedules s SET catch_up_at = nxt.at FROM nxt WHERE s.job_id = nxt.job_id
	)
	UPDATE job_runs r SET available_at = r.available_at
	  FROM nxt
	 WHERE r.job_id = nxt.job_id AND r.trigger = 'schedule' AND r.scheduled_at = nxt.at AND r.status = 'pending'`

// advanceCatchUps lets the next catch-up run of each job in a chain go
// once the previous one has finished.
func advanceCatchUps(ctx context.Context, tx pgx.Tx, batch int) error {
	_, err := tx.Exec(ctx, advanceCatchUpsSQL, batch)
	return mapErr(err, "materialize: advance catch-ups")
}
