package sql

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/jackc/pgx/v5"
)

// Trigger enqueues a manual run of the job, available now. ENOTFOUND.
//
// A manual run ignores the overlap policy and the enabled flag: "run it
// now" is an explicit request, also for a paused job.
func (db *DB) Trigger(ctx context.Context, jobID int64) (*chronos.Run, error) {
	var r *chronos.Run
	// Under an Idempotency-Key, the key and its answer (given r) are
	// stored in the run's transaction.
	err := db.guarded(ctx, false, func(q querier) ([]any, error) {
		var err error
		r, err = scanRun(q.QueryRow(ctx, `
		WITH r AS (
			INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at)
			VALUES ($1, now(), 'manual', now())
			RETURNING `+runColumns+`
		), audit AS (
			INSERT INTO job_audit (job_id, action, actor, run_id) SELECT job_id, 'trigger', $2, id FROM r
		)
		SELECT `+runColumns+` FROM r`, jobID, chronos.ActorFrom(ctx)))
		return []any{r}, err
	})
	if err != nil {
		if pgCode(err) == "23503" { // foreign_key_violation: no such job
			return nil, jobNotFound(jobID)
		}
		return nil, mapErr(err, "trigger job")
	}
	return r, nil
}

// HasActiveRun reports whether the job has a pending, leased or running run.
func (db *DB) HasActiveRun(ctx context.Context, jobID int64) (bool, error) {
	var active bool
	err := db.Pool.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM job_runs
		                WHERE job_id = $1 AND status IN ('pending', 'leased', 'running'))`, jobID).Scan(&active)
	if err != nil {
		return false, mapErr(err, "has active run")
	}
	return active, nil
}

// RunFilter selects a page of a job's runs.
type RunFilter struct {
	Status chronos.RunStatus // "": all
	Cursor string
	Limit  int // default 50, capped at 500
}

// Runs returns a page of the job's runs, newest first, and the next
// cursor. ENOTFOUND for an unknown job, EINVALID for a bad cursor (field
// "cursor") or status (field "status").
func (db *DB) Runs(ctx context.Context, jobID int64, f RunFilter) ([]*chronos.Run, string, error) {
	if f.Status != "" && !f.Status.Valid() {
		return nil, "", chronos.InvalidFields(map[string]string{
			"status": "must be one of pending, leased, running, succeeded, dead, missed"})
	}
	before, err := decodeCursor(f.Cursor)
	if err != nil {
		return nil, "", err
	}
	limit := pageLimit(f.Limit)
	q := "SELECT " + runColumns + " FROM job_runs WHERE job_id = $1"
	args := []any{jobID, limit + 1}
	if before > 0 {
		args = append(args, before)
		q += fmt.Sprintf(" AND id < $%d", len(args))
	}
	if f.Status != "" {
		args = append(args, string(f.Status))
		q += fmt.Sprintf(" AND status = $%d", len(args))
	}
	q += " ORDER BY id DESC LIMIT $2"
	rows, err := db.Pool.Query(ctx, q, args...)
	runs, err := collect(rows, err, "list runs", scanRun)
	if err != nil {
		return nil, "", err
	}
	if len(runs) == 0 {
		// Only an empty page needs the second look: a job with runs exists.
		if _, err := db.Job(ctx, jobID); err != nil {
			return nil, "", err
		}
	}
	runs, next := cutPage(runs, limit, runID)
	return runs, next, nil
}

func runID(r *chronos.Run) int64 { return r.ID }

// Run returns a run with its attempts. ENOTFOUND.
func (db *DB) Run(ctx context.Context, id int64) (*chronos.Run, error) {
	// One round trip for both; they need not be one snapshot (an attempt
	// recorded in between is merely fresher news).
	b := &pgx.Batch{}
	b.Queue("SELECT "+runColumns+" FROM job_runs WHERE id = $1", id)
	b.Queue("SELECT "+attemptColumns+" FROM run_attempts_all WHERE run_id = $1 ORDER BY attempt", id)
	br := db.Pool.SendBatch(ctx, b)
	defer br.Close()
	r, err := scanRun(br.QueryRow())
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, runNotFound(id)
	}
	if err != nil {
		return nil, mapErr(err, "get run")
	}
	rows, err := br.Query()
	r.Attempts, err = collect(rows, err, "get run attempts", scanAttempt)
	if err != nil {
		return nil, err
	}
	if err := br.Close(); err != nil {
		return nil, mapErr(err, "get run")
	}
	return r, nil
}

func runNotFound(id int64) error { return chronos.Errorf(chronos.ENOTFOUND, "run %d not found", id) }

// Redrive gives a dead run a fresh set of attempts: a new pending run
// (trigger redrive) of the same job and scheduled instant. ECONFLICT when
// the run is not dead, ENOTFOUND when it does not exist.
//
// ECONFLICT too when an earlier redrive of the same run is still active,
// so a double click does not deliver twice.
func (db *DB) Redrive(ctx context.Context, runID int64) (*chronos.Run, error) {
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("redrive run: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	// Under an Idempotency-Key, the key is taken first in this
	// transaction and answered (given the new run) before its commit.
	g := idempotencyFrom(ctx)
	if err := takeIdempotencyKey(ctx, tx, g); err != nil {
		return nil, err
	}
	var (
		jobID       int64
		status      chronos.RunStatus
		scheduledAt time.Time
		active      bool
	)
	// FOR UPDATE serialises concurrent redrives of one run.
	err = tx.QueryRow(ctx, `
		SELECT r.job_id, r.status, r.scheduled_at,
		       EXISTS (SELECT 1 FROM job_runs a
		                WHERE a.job_id = r.job_id AND a.redrive_of = r.id
		                  AND a.status IN ('pending', 'leased', 'running'))
		  FROM job_runs r WHERE r.id = $1 FOR UPDATE`, runID).Scan(&jobID, &status, &scheduledAt, &active)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, runNotFound(runID)
	}
	if err != nil {
		return nil, mapErr(err, "redrive run")
	}
	if status != chronos.StatusDead {
		return nil, chronos.Errorf(chronos.ECONFLICT, "run %d is %s; only a dead run can be redriven", runID, status)
	}
	if active {
		return nil, chronos.Errorf(chronos.ECONFLICT, "run %d is already being redriven", runID)
	}
	r, err := scanRun(tx.QueryRow(ctx, `
		INSERT INTO job_runs (job_id, scheduled_at, trigger, redrive_of, available_at)
		VALUES ($1, $2, 'redrive', $3, now())
		RETURNING `+runColumns, jobID, scheduledAt, runID))
	if err != nil {
		return nil, mapErr(err, "redrive run")
	}
	if err := recordAudit(ctx, tx, jobID, chronos.AuditRedrive, &r.ID, nil); err != nil {
		return nil, err
	}
	answer, err := answerIdempotencyKey(ctx, tx, g, r)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, mapErr(err, "redrive run")
	}
	if g != nil {
		g.stored = answer
	}
	return r, nil
}

// NextAvailable returns the earliest available_at of a pending run that
// a claim could take once it is due, or nil. Runs held back behind an
// active run of their job, or until the materializer catches up with
// their job (see claimSQL), or by their host (hostClearSQL: a deferral
// or an open breaker), are left out: the promotion or the
// materialization that frees them wakes the dispatchers.
//
// While a host holds runs back, the walk past them is bounded: of the
// first nextAvailableWalk candidates in order, the first whose host is
// clear, or, when none is, the last one's instant (no clear run can be
// due sooner; the dispatcher asks again then). A held host's backlog is
// due at or after the hold's end, so without the bound every call walked
// all of it, one host probe per run: 20 to 90 ms for 100 held runs on the
// shared 2-core machine, in the dispatcher's loop (no claim meanwhile),
// on every instance each time a deferral moved the backlog.
func (db *DB) NextAvailable(ctx context.Context) (*time.Time, error) {
	var (
		t   *time.Time
		err error
	)
	// From the connection's generic plan, without JIT (QueryRowPlannedOnce):
	// planned for each call, the statement took 20 ms to plan with a
	// backlog of 200,000 due runs, and the plan's estimated cost, which
	// grows with the backlog, crossed jit_above_cost: 750 ms of LLVM per
	// call, in the dispatcher's loop, several times a second. A sustained
	// load just past what the machine delivers collapsed from 5,000 runs/s
	// to under 100 (session 17).
	if db.HostsReady(ctx) {
		err = db.Pool.QueryRowPlannedOnce(ctx, nextAvailableSQL, nextAvailableWalk).Scan(&t)
	} else {
		// A binary ahead of its schema (see hostsSQL): no host holds.
		err = db.Pool.QueryRowPlannedOnce(ctx, `
			SELECT r.available_at FROM job_runs r
			 WHERE r.status = 'pending' AND NOT r.held AND `+claimableSQL+`
			 ORDER BY r.available_at, r.id
			 LIMIT 1`).Scan(&t)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, mapErr(err, "next available run")
	}
	utcPtr(&t)
	return t, nil
}

// nextAvailableSQL is NextAvailable's statement ($1: nextAvailableWalk).
// While nothing is held (nearly always) it looks at one candidate, as a
// plain LIMIT 1 would.
var nextAvailableSQL = `
	WITH c AS MATERIALIZED (
		SELECT r.id, r.job_id, r.available_at FROM job_runs r
		 WHERE r.status = 'pending' AND NOT r.held AND ` + claimableSQL + `
		 ORDER BY r.available_at, r.id
		 LIMIT CASE WHEN EXISTS (SELECT 1 FROM hosts WHERE held_until > now()) THEN $1::int ELSE 1 END
	)
	SELECT coalesce(
		(SELECT r.available_at FROM c r WHERE ` + hostClearSQL + `
		  ORDER BY r.available_at, r.id LIMIT 1),
		(SELECT max(available_at) FROM c HAVING count(*) = $1::int))`

// nextAvailableWalk bounds how many candidates NextAvailable looks at
// while a host holds runs back.
const nextAvailableWalk = 32
