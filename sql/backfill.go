package sql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/jackc/pgx/v5"
)

// Backfill creates one run, trigger "backfill", for each occurrence of a
// cron job's schedule in [from, to) that has no run yet, oldest first, in
// one transaction, audited; a dry run lists them and creates nothing. The
// occurrences are the schedule's (time zone, DST, bounds, exclusions,
// calendars: chronos.Job.BackfillPlan); more than chronos.MaxBackfill is
// an EINVALID naming "to"; a to after now is taken as now.
//
// An occurrence's identity is (job, scheduled_at): one that already has a
// run, scheduled or backfilled, gets none (Existing), so a second backfill
// of an overlapping range creates nothing twice. The unique index of
// job_runs covers scheduled runs only (its arbiter is the materializer's
// ON CONFLICT), so the check is made under the job's schedule row, locked
// FOR UPDATE as the materializer and a PATCH lock it: two backfills of one
// job, or a backfill and the materializer, take turns. Occurrences at or
// after the job's next_run_at are the materializer's to create (the job
// is behind: no leader for a while); they are listed as Existing too.
//
// The runs are available at once, in order (the claim takes runs by
// available_at, then id), and run under the job's overlap policy: with
// skip or queue_one, one at a time, oldest first (the overlap lock, see
// runlock.go); with allow, as workers are free, started oldest first.
// Idempotency-Key (WithIdempotency) is stored in the same transaction.
func (db *DB) Backfill(ctx context.Context, jobID int64, req chronos.BackfillRequest) (chronos.Backfill, error) {
	if req.DryRun {
		return db.backfillDryRun(ctx, jobID, req)
	}
	return retryTx(ctx, func() (chronos.Backfill, error) {
		var b chronos.Backfill
		err := db.guarded(ctx, true, func(q querier) ([]any, error) {
			tx, ok := q.(pgx.Tx)
			if !ok {
				return nil, errors.New("backfill: not in a transaction")
			}
			var err error
			b, err = backfill(ctx, tx, jobID, req)
			return []any{&b}, err
		})
		if err != nil {
			return chronos.Backfill{}, mapErr(err, "backfill")
		}
		return b, nil
	})
}

// backfill is one attempt of Backfill.
func backfill(ctx context.Context, tx pgx.Tx, jobID int64, req chronos.BackfillRequest) (chronos.Backfill, error) {
	var (
		s       jobScan
		now     time.Time
		rawNext *time.Time
	)
	err := tx.QueryRow(ctx, "SELECT "+jobColumns+", now() FROM jobs WHERE id = $1 FOR NO KEY UPDATE", jobID).
		Scan(append(s.dest(), &now)...)
	if err != nil {
		return chronos.Backfill{}, lookupErr(err, jobNotFound(jobID), "backfill: lock the job")
	}
	err = tx.QueryRow(ctx, "SELECT next_run_at FROM job_schedules WHERE job_id = $1 FOR UPDATE", jobID).Scan(&rawNext)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return chronos.Backfill{}, mapErr(err, "backfill: lock the job's schedule")
	}
	j := s.job()
	if err := attachCalendars(ctx, tx, []*chronos.Job{j}, nil); err != nil {
		return chronos.Backfill{}, err
	}
	b, err := backfillPlan(ctx, tx, j, req, now.UTC())
	if err != nil {
		return b, err
	}
	todo := make([]time.Time, 0, len(b.Occurrences))
	for _, t := range b.Occurrences {
		if j.Enabled && rawNext != nil && !t.Before(*rawNext) {
			if !hasTime(b.Existing, t) { // listed once, had it a run already
				b.Existing = append(b.Existing, t) // the materializer's
			}
			continue
		}
		if !hasTime(b.Existing, t) {
			todo = append(todo, t)
		}
	}
	slices.SortFunc(b.Existing, time.Time.Compare) // the runs' and the materializer's, in order
	if len(todo) > 0 {
		rows, err := tx.Query(ctx, `
			INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at)
			SELECT $1, u.at, 'backfill', now() FROM unnest($2::timestamptz[]) WITH ORDINALITY AS u(at, ord)
			 ORDER BY u.ord
			RETURNING `+runColumns, jobID, todo)
		if err != nil {
			return b, mapErr(err, "backfill: create runs")
		}
		b.Created, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*chronos.Run, error) { return scanRun(r) })
		if err != nil {
			return b, mapErr(err, "backfill: create runs")
		}
	}
	summary, err := json.Marshal(map[string]any{"from": b.From, "to": b.To, "created": len(b.Created), "existing": len(b.Existing)})
	if err != nil {
		return b, fmt.Errorf("backfill: audit: %w", err)
	}
	if err := recordAudit(ctx, tx, jobID, chronos.AuditBackfill, nil, map[string]chronos.FieldChange{"backfill": {After: summary}}); err != nil {
		return b, err
	}
	return b, nil
}

// backfillDryRun answers a dry run: the occurrences and which of them
// already have a run, without locking or writing anything.
func (db *DB) backfillDryRun(ctx context.Context, jobID int64, req chronos.BackfillRequest) (chronos.Backfill, error) {
	j, err := db.Job(ctx, jobID)
	if err != nil {
		return chronos.Backfill{}, err
	}
	now, err := db.Now(ctx)
	if err != nil {
		return chronos.Backfill{}, err
	}
	b, err := backfillPlan(ctx, db.Pool, j, req, now)
	b.DryRun = true
	return b, err
}

// backfillPlan validates the request, lists the job's occurrences in the
// range (j has its calendars attached) and which of them have a run
// already.
func backfillPlan(ctx context.Context, q querier, j *chronos.Job, req chronos.BackfillRequest, now time.Time) (chronos.Backfill, error) {
	req.Clamp(now)
	if err := req.Validate(); err != nil {
		return chronos.Backfill{}, err
	}
	b, err := j.BackfillPlan(req.From, req.To)
	if err != nil {
		return b, err
	}
	if len(b.Occurrences) == 0 {
		return b, nil
	}
	rows, err := q.Query(ctx, `
		SELECT DISTINCT scheduled_at FROM job_runs
		 WHERE job_id = $1 AND scheduled_at = ANY($2) AND trigger IN ('schedule', 'backfill')
		 ORDER BY scheduled_at`, j.ID, b.Occurrences)
	existing, err := collect(rows, err, "backfill: existing runs", scanOne[time.Time])
	if err != nil {
		return b, err
	}
	for _, t := range existing {
		b.Existing = append(b.Existing, t.UTC())
	}
	return b, nil
}

func hasTime(ts []time.Time, t time.Time) bool {
	for _, x := range ts {
		if x.Equal(t) {
			return true
		}
	}
	return false
}
