package sql

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/internal/instant"
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
	next := instant.Later(now, dbNow).Add(max(lookahead, 0))
	if _, err := tx.Exec(ctx, "UPDATE chronos_materializer SET valid_until = $1", next); err != nil {
		return false, mapErr(err, "materialize: vouch for the lookahead")
	}
	return until != nil && until.Before(now), nil
}

// foldEndedSQL deletes, after a gap, the runs a cron job whose window has
// ended created ahead before it and that never started, when more than
// one of them is due (one due is merely late), for the jobs whose misfire
// policy folds them ("one" and "none"; "all" runs them, and is not
// selected). A queue_one job's runs wait behind the active one by design,
// and are left. It returns each run deleted with its job's policy, and
// whether it was the job's latest, which "one" creates again as the gap's
// catch-up (foldEnded): a new run, created now, as a gap's catch-up always
// is.
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
		   AND r.scheduled_at <= $1 AND ` + notOvertakenSQL + `
		 GROUP BY r.job_id, j.misfire
		HAVING count(*) > 1
	)
	DELETE FROM job_runs r USING stale
	 WHERE r.job_id = stale.job_id AND r.trigger = 'schedule' AND r.status = 'pending'
	   AND r.attempt_count = 0 AND r.scheduled_at <= stale.latest AND ` + notOvertakenSQL + `
	RETURNING r.job_id, stale.misfire, r.scheduled_at, coalesce(r.fire_at, r.available_at), r.scheduled_at = stale.latest`

// foldEnded applies foldEndedSQL at now and records what it did in res:
// under "one" a catch-up run for the latest occurrence (res.Runs,
// res.CatchUps) standing for the runs folded, under "none" every run
// deleted as missed.
func foldEnded(ctx context.Context, tx pgx.Tx, now time.Time, res *MaterializeResult) error {
	rows, err := tx.Query(ctx, foldEndedSQL, now)
	if err != nil {
		return mapErr(err, "materialize: fold the runs of finished jobs")
	}
	var (
		id         int64
		misfire    chronos.MisfirePolicy
		at, fireAt time.Time
		latest     bool
		folded     = map[int64]int{}
		jobs       []int64
		ats, fires []time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &misfire, &at, &fireAt, &latest}, func() error {
		switch {
		case misfire == chronos.MisfireNone:
			res.miss(id, chronos.SkipMisfire, 1)
		case latest:
			jobs, ats, fires = append(jobs, id), append(ats, at), append(fires, fireAt)
		default:
			folded[id]++
		}
		return nil
	})
	if err != nil || len(jobs) == 0 {
		return mapErr(err, "materialize: fold the runs of finished jobs")
	}
	rows, err = tx.Query(ctx, `
		INSERT INTO job_runs (job_id, scheduled_at, trigger, catch_up, available_at, fire_at)
		SELECT job_id, at, 'schedule', true, fire_at, fire_at
		  FROM unnest($1::bigint[], $2::timestamptz[], $3::timestamptz[]) AS v(job_id, at, fire_at)
		ON CONFLICT (job_id, scheduled_at) WHERE trigger = 'schedule' DO NOTHING
		RETURNING `+runColumns, jobs, ats, fires)
	runs, err := collect(rows, err, "materialize: create the catch-ups of finished jobs", scanRun)
	if err != nil {
		return err
	}
	for _, r := range runs {
		res.CatchUps = append(res.CatchUps, CatchUp{JobID: r.JobID, At: r.ScheduledAt, Folded: folded[r.JobID]})
	}
	res.Runs = append(res.Runs, runs...)
	res.Created += len(runs)
	return nil
}
