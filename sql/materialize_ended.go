package sql

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chronoshq/chronos"
)

// Vouches reports whether the database has chronos_materializer
// (migration 036), where each materializer pass records how long it
// vouches for the jobs it has looked at. Before it (a rolling upgrade's
// new instance whose migrations are still to run), claims do not hold a
// finished cron job's runs, as the release before did not.
func (db *DB) Vouches(ctx context.Context) bool {
	return db.schemaHas(ctx, &db.vouches, `SELECT to_regclass('chronos_materializer') IS NOT NULL`)
}

// vouch records that this pass has looked at every due job, at now, for
// the next lookahead, and reports whether the pass before it had stopped
// vouching before now: no leader materialized for a lookahead, a gap. The
// row's lock makes two passes (two leaders for a moment) take turns. A
// pass whose clock is behind the database's (a test passing its own now)
// still vouches from the database's: the claim compares with that.
func vouch(ctx context.Context, tx pgx.Tx, now, dbNow time.Time, lookahead time.Duration) (gap bool, err error) {
	var until *time.Time
	if err := tx.QueryRow(ctx, "SELECT valid_until FROM chronos_materializer FOR UPDATE").Scan(&until); err != nil {
		return false, mapErr(err, "materialize: read the last pass's vouch")
	}
	next := now
	if dbNow.After(next) {
		next = dbNow
	}
	next = next.Add(max(lookahead, 0))
	if _, err := tx.Exec(ctx, "UPDATE chronos_materializer SET valid_until = $1", next); err != nil {
		return false, mapErr(err, "materialize: vouch for the lookahead")
	}
	return until != nil && until.Before(now), nil
}

// foldEndedSQL folds, after a gap, the runs a cron job whose window has
// ended created ahead before it and that never started, by the job's
// misfire policy, as foldGaps does for a job with a next occurrence: a job
// with more than one such run due has a gap; "one" keeps the latest as its
// catch-up (flagged) and deletes the others, "none" deletes them all, and
// "all" keeps them (it is not selected). One run due is merely late. A
// queue_one job's runs wait behind the active one by design, and are left.
//
// It starts from the finished cron jobs (job_schedules_unscheduled_idx
// holds exactly the enabled cron jobs without a next run) and runs only on
// the first pass after a gap.
const foldEndedSQL = `
	WITH stale AS (
		SELECT r.job_id, j.misfire, max(r.scheduled_at) AS latest
		  FROM job_schedules s
		  JOIN jobs j ON j.id = s.job_id
		  JOIN job_runs r ON r.job_id = s.job_id
		 WHERE s.enabled AND s.cron AND s.next_run_at IS NULL
		   AND j.overlap <> 'queue_one' AND j.misfire <> 'all'
		   AND r.trigger = 'schedule' AND r.status = 'pending' AND r.attempt_count = 0
		   AND r.scheduled_at <= $1
		 GROUP BY r.job_id, j.misfire
		HAVING count(*) > 1
	), folded AS (
		DELETE FROM job_runs r USING stale
		 WHERE r.job_id = stale.job_id AND r.trigger = 'schedule' AND r.status = 'pending'
		   AND r.attempt_count = 0
		   AND (r.scheduled_at < stale.latest OR (stale.misfire = 'none' AND r.scheduled_at = stale.latest))
		RETURNING r.job_id
	), flagged AS (
		UPDATE job_runs r SET catch_up = true
		  FROM stale
		 WHERE stale.misfire = 'one' AND r.job_id = stale.job_id AND r.trigger = 'schedule'
		   AND r.scheduled_at = stale.latest AND r.status = 'pending'
		RETURNING r.job_id
	)
	SELECT stale.job_id, stale.misfire, stale.latest,
	       (SELECT count(*) FROM folded f WHERE f.job_id = stale.job_id)::int,
	       EXISTS (SELECT 1 FROM flagged f WHERE f.job_id = stale.job_id)
	  FROM stale`

// foldEnded applies foldEndedSQL at now and records what it did in res:
// under "one" a catch-up (res.CatchUps) standing for the runs it folded,
// under "none" every run deleted as missed.
func foldEnded(ctx context.Context, tx pgx.Tx, now time.Time, res *MaterializeResult) error {
	rows, err := tx.Query(ctx, foldEndedSQL, now)
	if err != nil {
		return mapErr(err, "materialize: fold the runs of finished jobs")
	}
	var (
		id      int64
		misfire chronos.MisfirePolicy
		latest  time.Time
		folded  int
		flagged bool
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &misfire, &latest, &folded, &flagged}, func() error {
		switch {
		case misfire == chronos.MisfireNone:
			res.miss(id, chronos.SkipMisfire, folded)
		case flagged:
			res.CatchUps = append(res.CatchUps, CatchUp{JobID: id, At: latest.UTC(), Folded: folded})
		}
		return nil
	})
	return mapErr(err, "materialize: fold the runs of finished jobs")
}
