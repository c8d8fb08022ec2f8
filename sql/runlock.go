package sql

import (
	"context"

	"github.com/chronoshq/chronos"
	"github.com/jackc/pgx/v5"
)

// The overlap lock and held runs (migration 016).
//
// A job whose overlap policy is skip or queue_one has at most one run
// leased or running: the claim takes the job's row in job_run_locks (ON
// CONFLICT DO NOTHING on its primary key, so two claimers cannot both win)
// in the statement that leases the run. Triggers on job_runs give the row
// up in the statement that takes the run out of leased/running, whatever
// statement that is, or deletes it. A pending run that waits behind the
// lock, or behind an earlier pending run of its job, is held (held =
// true): out of job_runs_claimable_idx, so it costs a claim nothing. The
// triggers promote the earliest held run of a job when the run ahead of it
// gives up the lock, is missed or is deleted: one row per completion. The
// lock alone decides whether a run may start; held only decides which
// runs a claim looks at. SweepRunLocks repairs what a bug or a hand edit
// of the tables may still break.

// LockRepairs counts what one SweepRunLocks repaired; all zero on a
// healthy database.
type LockRepairs struct {
	Orphans int // lock rows of runs no longer leased or running, deleted
	Missing int // jobs with an active run but no lock row, locked
	Stalled int // jobs whose held runs waited behind nothing, promoted
	Allowed int // runs held although their job allows overlap, released
}

// Total is the number of repairs.
func (r LockRepairs) Total() int { return r.Orphans + r.Missing + r.Stalled + r.Allowed }

// sweepOrphansSQL deletes lock rows whose run is not leased or running.
const sweepOrphansSQL = `
	DELETE FROM job_run_locks l
	 WHERE NOT EXISTS (SELECT 1 FROM job_runs r WHERE r.id = l.run_id AND r.status IN ('leased', 'running'))
	RETURNING l.job_id`

// sweepMissingSQL locks the jobs with an active run and no lock row. The
// runs are locked first (SKIP LOCKED: one being completed right now is
// left alone), so no lock is taken for a run that has just finished.
const sweepMissingSQL = `
	WITH a AS (
		SELECT r.id, r.job_id FROM job_runs r
		 WHERE r.status IN ('leased', 'running')
		   AND (SELECT j.overlap FROM jobs j WHERE j.id = r.job_id) <> 'allow'
		   AND NOT EXISTS (SELECT 1 FROM job_run_locks l WHERE l.job_id = r.job_id)
		   FOR UPDATE OF r SKIP LOCKED
	)
	INSERT INTO job_run_locks (job_id, run_id)
	SELECT DISTINCT ON (job_id) job_id, id FROM a ORDER BY job_id, id
	ON CONFLICT DO NOTHING`

// sweepHeldSQL visits each job with held runs (a loose index scan of
// job_runs_held_idx: one probe per job, not per run). A job that allows
// overlap has its runs released; an unlocked job with no unheld run
// left to wait behind has its earliest held run promoted.
const sweepHeldSQL = `
	WITH RECURSIVE h AS (
		(SELECT job_id FROM job_runs WHERE held AND status = 'pending' ORDER BY job_id LIMIT 1)
		UNION ALL
		SELECT (SELECT r.job_id FROM job_runs r
		         WHERE r.held AND r.status = 'pending' AND r.job_id > h.job_id ORDER BY r.job_id LIMIT 1)
		  FROM h WHERE h.job_id IS NOT NULL
	), k AS (
		SELECT h.job_id, coalesce((SELECT j.overlap FROM jobs j WHERE j.id = h.job_id), 'allow') = 'allow' AS allowed
		  FROM h WHERE h.job_id IS NOT NULL
	), released AS (
		UPDATE job_runs r SET held = false
		  FROM k WHERE k.allowed AND r.job_id = k.job_id AND r.held AND r.status = 'pending'
		RETURNING r.id
	), stalled AS (
		SELECT k.job_id FROM k
		 WHERE NOT k.allowed
		   AND NOT EXISTS (SELECT 1 FROM job_run_locks l WHERE l.job_id = k.job_id)
		   AND NOT EXISTS (SELECT 1 FROM job_runs o
		                    WHERE o.job_id = k.job_id AND o.status IN ('pending', 'leased', 'running') AND NOT o.held)
	), p AS (
		SELECT chronos_promote_runs(array_agg(job_id), false) FROM stalled HAVING count(*) > 0
	)
	SELECT (SELECT count(*) FROM stalled), (SELECT count(*) FROM released), (SELECT count(*) FROM p)`

// SweepRunLocks finds and repairs what should never happen to the overlap
// lock and held runs (see LockRepairs). The leader runs it now and then;
// every repair it makes is worth a look, and is counted in a metric.
func (db *DB) SweepRunLocks(ctx context.Context) (LockRepairs, error) {
	var (
		r LockRepairs
		p int
	)
	rows, err := db.Pool.Query(ctx, sweepOrphansSQL)
	freed, err := collect(rows, err, "sweep run locks: orphans", scanOne[int64])
	if err != nil {
		return r, err
	}
	r.Orphans = len(freed)
	if len(freed) > 0 {
		// In a statement of its own: it must see the deletions.
		if _, err := db.Pool.Exec(ctx, "SELECT chronos_promote_runs($1, true)", freed); err != nil {
			return r, mapErr(err, "sweep run locks: promote behind orphans")
		}
	}
	tag, err := db.Pool.Exec(ctx, sweepMissingSQL)
	if err != nil {
		return r, mapErr(err, "sweep run locks: missing")
	}
	r.Missing = int(tag.RowsAffected())
	if err := db.Pool.QueryRow(ctx, sweepHeldSQL).Scan(&r.Stalled, &r.Allowed, &p); err != nil {
		return r, mapErr(err, "sweep run locks: held runs")
	}
	return r, nil
}

// reoverlap keeps the lock and the held runs of job id right when a PATCH
// changes its overlap policy, inside the PATCH's transaction (which holds
// the job's row).
//
// From allow to skip or queue_one: the job's active runs were claimed
// without the lock, so the lock is taken now for one of them (the triggers
// pass it on to another still active when that one ends). The job's
// pending, leased and running runs are locked first: a claim leasing one
// of them right now under the old policy is waited for, and its run then
// seen as active. Then every pending run that waits behind the lock or an
// earlier pending run is held. From skip or queue_one to allow: nothing
// waits any more, so every held run is released.
func reoverlap(ctx context.Context, tx pgx.Tx, id int64, before, after chronos.OverlapPolicy) error {
	wasExclusive, isExclusive := before != chronos.OverlapAllow, after != chronos.OverlapAllow
	switch {
	case !wasExclusive && isExclusive:
		_, err := tx.Exec(ctx, `
			WITH mine AS (
				SELECT id, status FROM job_runs
				 WHERE job_id = $1 AND status IN ('pending', 'leased', 'running')
				 ORDER BY id
				   FOR UPDATE
			), locked AS (
				INSERT INTO job_run_locks (job_id, run_id)
				SELECT $1, id FROM mine WHERE status IN ('leased', 'running') ORDER BY id LIMIT 1
				ON CONFLICT DO NOTHING
				RETURNING run_id
			), ranked AS (
				SELECT id, row_number() OVER (ORDER BY r.available_at, r.id) AS n FROM job_runs r
				 WHERE r.id IN (SELECT id FROM mine WHERE status = 'pending')
			)
			UPDATE job_runs r SET held = true
			  FROM ranked
			 WHERE r.id = ranked.id
			   AND (ranked.n > 1 OR EXISTS (SELECT 1 FROM locked)
			        OR EXISTS (SELECT 1 FROM job_run_locks l WHERE l.job_id = $1))`, id)
		if err != nil {
			return mapErr(err, "update job: take the overlap lock")
		}
	case wasExclusive && !isExclusive:
		_, err := tx.Exec(ctx, `UPDATE job_runs SET held = false WHERE job_id = $1 AND held AND status = 'pending'`, id)
		if err != nil {
			return mapErr(err, "update job: release held runs")
		}
	}
	return nil
}
