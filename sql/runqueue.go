package sql

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/chronoshq/chronos"
)

// MaxRedriveBatch is the most runs one bulk redrive sends round again.
const MaxRedriveBatch = 1000

// RunQuery selects runs across jobs: the dead-letter queue and its
// neighbours. Every set field must match.
type RunQuery struct {
	Status  chronos.RunStatus // "": any
	JobID   int64             // 0: any
	Trigger chronos.Trigger   // "": any
	Since   *time.Time        // created at or after
	Until   *time.Time        // created before
	Cursor  string
	Limit   int // default 50, capped at 500 (lists); default and cap MaxRedriveBatch (redrive)
}

// validate checks the enumerations; the HTTP layer names the same fields.
func (q *RunQuery) validate() error {
	f := map[string]string{}
	if q.Status != "" && !q.Status.Valid() {
		f["status"] = "must be one of pending, leased, running, succeeded, dead"
	}
	switch q.Trigger {
	case "", chronos.TriggerSchedule, chronos.TriggerManual, chronos.TriggerRedrive, chronos.TriggerBackfill:
	default:
		f["trigger"] = "must be one of schedule, manual, redrive, backfill"
	}
	if q.JobID < 0 {
		f["job_id"] = "must be a positive integer"
	}
	if q.Since != nil && q.Until != nil && !q.Since.Before(*q.Until) {
		f["until"] = "must be after since"
	}
	if len(f) > 0 {
		return chronos.InvalidFields(f)
	}
	return nil
}

// where appends q's conditions on the runs aliased r to args and returns
// them joined with AND ("true" when none).
func (q *RunQuery) where(args *[]any) string {
	var conds []string
	add := func(cond string, v any) {
		*args = append(*args, v)
		conds = append(conds, fmt.Sprintf(cond, len(*args)))
	}
	if q.Status != "" {
		add("r.status = $%d", string(q.Status))
	}
	if q.JobID != 0 {
		add("r.job_id = $%d", q.JobID)
	}
	if q.Trigger != "" {
		add("r.trigger = $%d", string(q.Trigger))
	}
	if q.Since != nil {
		add("r.created_at >= $%d", *q.Since)
	}
	if q.Until != nil {
		add("r.created_at < $%d", *q.Until)
	}
	if len(conds) == 0 {
		return "true"
	}
	return strings.Join(conds, " AND ")
}

// AllRuns returns a page of the runs of every job that match q, newest
// first, and the next cursor. EINVALID for a bad cursor or filter.
func (db *DB) AllRuns(ctx context.Context, q RunQuery) ([]*chronos.Run, string, error) {
	if err := q.validate(); err != nil {
		return nil, "", err
	}
	before, err := decodeCursor(q.Cursor)
	if err != nil {
		return nil, "", err
	}
	limit := pageLimit(q.Limit)
	args := []any{limit + 1}
	cond := q.where(&args)
	if before > 0 {
		args = append(args, before)
		cond += fmt.Sprintf(" AND r.id < $%d", len(args))
	}
	rows, err := db.Pool.Query(ctx, "SELECT "+qualified("r", runColumns)+" FROM job_runs r WHERE "+cond+
		" ORDER BY r.id DESC LIMIT $1", args...)
	runs, err := collect(rows, err, "list runs", scanRun)
	if err != nil {
		return nil, "", err
	}
	runs, next := cutPage(runs, limit, runID)
	return runs, next, nil
}

// RedriveAll redrives, oldest first, up to q.Limit (at most
// MaxRedriveBatch) dead runs that match q and were never redriven, and
// returns the new pending runs and whether more such runs remain. A dead
// redrive is itself a dead run, never redriven, so a run that keeps dying
// is offered again, once per death.
//
// q.Status must be "" or dead. Concurrent calls never redrive one run
// twice while its redrive is active: job_runs_active_redrive_key refuses
// the second insert, which ON CONFLICT skips.
func (db *DB) RedriveAll(ctx context.Context, q RunQuery) ([]*chronos.Run, bool, error) {
	if q.Status != "" && q.Status != chronos.StatusDead {
		return nil, false, chronos.InvalidFields(map[string]string{"status": "only dead runs can be redriven"})
	}
	if q.Cursor != "" {
		return nil, false, chronos.InvalidFields(map[string]string{"cursor": "a redrive takes no cursor"})
	}
	if err := q.validate(); err != nil {
		return nil, false, err
	}
	q.Status = chronos.StatusDead
	limit := q.Limit
	if limit <= 0 || limit > MaxRedriveBatch {
		limit = MaxRedriveBatch
	}
	args := []any{limit, chronos.ActorFrom(ctx)}
	cond := q.where(&args)
	var (
		out    []*chronos.Run
		picked int64
	)
	// Under an Idempotency-Key, the key and its answer (given the runs
	// and whether more remain) are stored in this statement's transaction.
	err := db.guarded(ctx, false, func(qr querier) ([]any, error) {
		rows, err := qr.Query(ctx, `
		WITH picked AS (
			SELECT r.id, r.job_id, r.scheduled_at FROM job_runs r
			 WHERE `+cond+`
			   AND NOT EXISTS (SELECT 1 FROM job_runs a WHERE a.redrive_of = r.id)
			 ORDER BY r.id LIMIT $1 + 1
		), batch AS (
			SELECT * FROM picked ORDER BY id LIMIT $1
		), ins AS (
			INSERT INTO job_runs (job_id, scheduled_at, trigger, redrive_of, available_at)
			SELECT job_id, scheduled_at, 'redrive', id, now() FROM batch ORDER BY id
			ON CONFLICT (redrive_of, scheduled_at) WHERE redrive_of IS NOT NULL AND status IN ('pending', 'leased', 'running')
			DO NOTHING
			RETURNING `+runColumns+`
		), audit AS (
			INSERT INTO job_audit (job_id, action, actor, run_id)
			SELECT job_id, 'redrive', $2, id FROM ins
		)
		SELECT `+runColumns+`, (SELECT count(*) FROM picked) FROM ins ORDER BY redrive_of`, args...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		for rows.Next() {
			var r chronos.Run
			if err := rows.Scan(append(runDest(&r), &picked)...); err != nil {
				return nil, err
			}
			out = append(out, normRun(&r))
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
		return []any{out, picked > int64(limit)}, nil
	})
	if err != nil {
		return nil, false, mapErr(err, "redrive runs")
	}
	return out, picked > int64(limit), nil
}
