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

// CreateJob stores a new, validated job, computing next_run_at, and fills
// j's id, next_run_at and timestamps. Constraint violations come back as
// EINVALID.
//
// It applies the defaults (ApplyDefaults) and validates first, so a caller
// that forgot gets a 400, never a constraint's 500. next_run_at is the
// first occurrence after the database's clock; a disabled cron job has
// none until it is resumed.
//
// Concurrent calls share one multi-row insert and one commit (see
// creates.go); a taken name fails its own call only. A create under an
// Idempotency-Key (WithIdempotency) is written alone, with its key.
func (db *DB) CreateJob(ctx context.Context, j *chronos.Job) error {
	j.ApplyDefaults()
	if err := j.Validate(); err != nil {
		return err
	}
	if err := db.checkLimitKey(ctx, j); err != nil {
		return err
	}
	if idempotencyFrom(ctx) == nil && len(j.Calendars) == 0 {
		// Concurrent creates share one insert and one commit (creates.go);
		// a job with calendars is written alone, with their rows.
		return db.createCoalesced(ctx, j)
	}
	// A create under an Idempotency-Key is written alone, in the
	// transaction that stores its key and answer.
	err := db.guarded(ctx, true, func(tx querier) ([]any, error) {
		var now time.Time
		if err := tx.QueryRow(ctx, "SELECT now()").Scan(&now); err != nil {
			return nil, mapErr(err, "create job: read the clock")
		}
		cerrs, err := resolveCalendars(ctx, tx, []*chronos.Job{j})
		if err = firstErr(err, []error{cerrs[0]}); err != nil {
			return nil, err
		}
		row, err := prepareJob(ctx, j, now.UTC())
		if err != nil {
			return nil, err
		}
		errs, err := insertJobs(ctx, tx, []preparedJob{{j: j, row: row}})
		if err = firstErr(err, errs); err != nil {
			return nil, err
		}
		if err := writeCalendars(ctx, tx, []*chronos.Job{j}, false); err != nil {
			return nil, err
		}
		return []any{j}, nil
	})
	if err != nil {
		return mapErr(err, "create job")
	}
	db.notifyCreated(ctx, j)
	return nil
}

// policyArgs are the scheduling policy columns of j (starts_at, ends_at,
// misfire, starting_deadline_seconds, jitter_seconds, exclude), in the
// order of CreateJob's INSERT and UpdateJob's UPDATE after the secrets.
func policyArgs(j *chronos.Job) []any {
	exclude := j.Exclude
	if exclude == nil {
		exclude = []chronos.DateRange{}
	}
	return []any{j.StartsAt, j.EndsAt, string(j.Misfire), j.StartingDeadlineSeconds, j.JitterSeconds, exclude}
}

// jobArgs are the user-settable columns of j, then next_run_at, in the
// order of CreateJob's INSERT and UpdateJob's UPDATE.
func jobArgs(j *chronos.Job, next *time.Time) []any {
	return []any{j.Name, j.CronExpr, j.RunAt, j.Timezone, j.TargetURL, j.Method, j.Headers,
		payloadArg(j.Payload), j.TimeoutSeconds, j.MaxRetries, string(j.Backoff), j.BackoffBaseSeconds,
		j.BackoffMaxSeconds, string(j.Overlap), j.Enabled, next}
}

// payloadArg sends a payload byte for byte (the column is json, not jsonb),
// and an absent one as NULL.
func payloadArg(p json.RawMessage) any {
	if len(p) == 0 {
		return nil
	}
	return string(p)
}

// Job returns one job, or ENOTFOUND.
func (db *DB) Job(ctx context.Context, id int64) (*chronos.Job, error) {
	j, err := scanJob(db.Pool.QueryRow(ctx, "SELECT "+jobColumns+" FROM jobs WHERE id = $1", id))
	if err != nil {
		return nil, lookupErr(err, jobNotFound(id), "get job")
	}
	if err := attachCalendars(ctx, db.Pool, []*chronos.Job{j}, nil); err != nil {
		return nil, err
	}
	return j, nil
}

func jobNotFound(id int64) error { return chronos.Errorf(chronos.ENOTFOUND, "job %d not found", id) }

// JobFilter selects a page of jobs. Every set filter must match.
type JobFilter struct {
	Enabled    *bool             // nil: all
	NamePrefix string            // names that begin with it (bytewise)
	Q          string            // a case-insensitive substring of the name or the description
	Labels     map[string]string // every label must be on the job
	Cursor     string            // opaque, from a previous page; "" starts at the beginning
	Limit      int               // default 50, capped at 500
}

// Jobs returns a page of jobs in id order and the cursor of the next page
// ("" on the last). A malformed cursor is EINVALID.
func (db *DB) Jobs(ctx context.Context, f JobFilter) ([]*chronos.Job, string, error) {
	after, err := decodeCursor(f.Cursor)
	if err != nil {
		return nil, "", err
	}
	limit := pageLimit(f.Limit)
	var jobs []*chronos.Job
	if f.searching() {
		jobs, err = db.searchJobs(ctx, f, after, limit+1)
	} else {
		args := []any{after, limit + 1}
		cond := ""
		if f.Enabled != nil {
			cond += " AND enabled = $3"
			args = append(args, *f.Enabled)
		}
		jobs, err = db.queryJobs(ctx, "SELECT "+jobColumns+" FROM jobs WHERE id > $1"+cond+" ORDER BY id LIMIT $2", args)
	}
	if err != nil {
		return nil, "", err
	}
	jobs, next := cutPage(jobs, limit, func(j *chronos.Job) int64 { return j.ID })
	return jobs, next, nil
}

// UpdateJob applies a partial update in one transaction (absent fields
// untouched, validation of the result, next_run_at recomputed when the
// schedule changed) and returns the job as stored. ENOTFOUND, EINVALID.
//
// Every scheduling decision reads the database's clock, once, at the start
// of the transaction. When the schedule changes (cron_expr, run_at, or the
// time zone of a cron job) or the job is paused, the runs the materializer
// created ahead for the old schedule (pending, never attempted, not yet
// due) are deleted: a paused job does not fire a lookahead's worth of
// occurrences afterwards. What that means for next_run_at:
//   - a cron job that is paused has none (stored null); resuming it, or
//     changing its schedule, starts from the first occurrence after now:
//     occurrences missed while paused are not caught up. A schedule that
//     has no further occurrence leaves it null; that is a 400 only when
//     cron_expr itself changed.
//   - a one-shot keeps its one occurrence until it has fired: deleting its
//     run created ahead puts run_at back as its next_run_at, so pausing and
//     resuming it, or any other change, never loses its only run. A new
//     run_at is a new occurrence. A one-shot paused past its run_at fires
//     once when resumed. The stored next_run_at of a paused one-shot is
//     kept for that, and shown as null like every paused job's.
//
// A deadlock or serialization failure (which the lock order below should
// make impossible) is retried (see retryTx), never answered as a 500.
func (db *DB) UpdateJob(ctx context.Context, id int64, u *chronos.JobUpdate) (*chronos.Job, error) {
	return retryTx(ctx, func() (*chronos.Job, error) { return db.updateJob(ctx, id, u) })
}

// updateJob is one attempt of UpdateJob.
func (db *DB) updateJob(ctx context.Context, id int64, u *chronos.JobUpdate) (*chronos.Job, error) {
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("update job: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit

	var (
		s       jobScan
		rawNext *time.Time // next_run_at as stored (a paused job shows null)
		now     time.Time
	)
	// The job's row, then its schedule row, then (dropRunsAhead,
	// reoverlap) its runs, locked in that order, as a delete takes them
	// (see lockJobForWrite); the materializer, which skips locked rows,
	// holds the schedule row while it plans the job, so this waits for it
	// and then sees the runs it created. The job's row is locked FOR NO
	// KEY UPDATE, not FOR UPDATE: a claim or a completion holds a run of
	// the job and then takes FOR KEY SHARE on the job's row (the foreign
	// key of the overlap lock row it inserts); FOR UPDATE conflicts with
	// that, and waiting for that run here while holding it was a deadlock.
	err = tx.QueryRow(ctx, "SELECT "+jobColumns+", now() FROM jobs WHERE id = $1 FOR NO KEY UPDATE", id).
		Scan(append(s.dest(), &now)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, jobNotFound(id)
	}
	if err != nil {
		return nil, mapErr(err, "update job")
	}
	err = tx.QueryRow(ctx, "SELECT next_run_at FROM job_schedules WHERE job_id = $1 FOR UPDATE", id).Scan(&rawNext)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) { // no row: upserted below
		return nil, mapErr(err, "update job: lock its schedule")
	}
	j := s.job()
	if err := attachCalendars(ctx, tx, []*chronos.Job{j}, nil); err != nil {
		return nil, err
	}
	old := *j
	if _, err := u.Apply(j); err != nil {
		return nil, err
	}
	if err := j.Validate(); err != nil {
		return nil, err
	}
	if cerrs, err := resolveCalendars(ctx, tx, []*chronos.Job{j}); err != nil || cerrs[0] != nil {
		return nil, firstErr(err, []error{cerrs[0]})
	}
	c := scheduleChangeOf(&old, j)
	if c.cron {
		// A new expression must fire again; an unchanged one that has
		// run its course does not block other edits.
		if err := j.ValidateSchedule(now); err != nil {
			return nil, err
		}
	}

	var (
		dropped []time.Time // scheduled_at of the deleted runs created ahead
	)
	if c.schedule || c.pausing {
		if dropped, _, err = dropRunsAhead(ctx, tx, j, c); err != nil {
			return nil, err
		}
	}
	next, err := nextAfterUpdate(&old, j, c, rawNext, dropped, now)
	if err != nil {
		return nil, err
	}
	// The runs kept stand for their occurrences, but the schedule does
	// not jump past them: an occurrence of the new plan before the last
	// kept run may have none (the old plan excluded it), and the
	// materializer's unique key makes a second run of a kept occurrence a
	// no-op.

	// Before the UPDATE of jobs, which takes FOR UPDATE on the job's row
	// when it renames the job (a unique key): no run is locked after it.
	if err := reoverlap(ctx, tx, id, old.Overlap, j.Overlap); err != nil {
		return nil, err
	}
	if err := relimit(ctx, tx, id, old.LimitKey, j.LimitKey); err != nil {
		return nil, err
	}

	args := append(append(append([]any{id}, jobArgs(j, next)...), secretHeadersArg(j)), policyArgs(j)...)
	args = append(args, j.Description, labelsArg(j), j.OnDeadURL, j.LimitKey)
	// The schedule row in a CTE of the same statement: RETURNING does not
	// see it (one snapshot), so next_run_at is set from next below.
	var stored jobScan
	err = tx.QueryRow(ctx, `
		WITH sched AS (
			INSERT INTO job_schedules (job_id, enabled, cron, next_run_at)
			VALUES ($1, $16, $3::text IS NOT NULL, $17)
			ON CONFLICT (job_id) DO UPDATE
			   SET enabled = excluded.enabled, cron = excluded.cron, next_run_at = excluded.next_run_at
		)
		UPDATE jobs SET name = $2, cron_expr = $3, run_at = $4, timezone = $5, target_url = $6, method = $7,
		       headers = $8, payload = $9, timeout_seconds = $10, max_retries = $11, backoff = $12,
		       backoff_base_seconds = $13, backoff_max_seconds = $14, overlap = $15, enabled = $16,
		       secret_headers = $18, starts_at = $19, ends_at = $20, misfire = $21,
		       starting_deadline_seconds = $22, jitter_seconds = $23, exclude = $24, description = $25, labels = $26,
		       on_dead_url = $27, limit_key = $28, updated_at = now()
		 WHERE id = $1
		RETURNING `+jobColumns, args...).Scan(stored.dest()...)
	if err != nil {
		return nil, mapErr(err, "update job")
	}
	stored.j.NextRunAt = next
	after := stored.job()
	if !slices.Equal(old.Calendars, j.Calendars) || old.CalendarPolicy != j.CalendarPolicy {
		if err := writeCalendars(ctx, tx, []*chronos.Job{j}, true); err != nil {
			return nil, err
		}
	}
	after.Calendars, after.CalendarPolicy = j.Calendars, j.CalendarPolicy
	if changes := chronos.JobChanges(&old, after); len(changes) > 0 {
		if err := recordAudit(ctx, tx, id, auditAction(changes), nil, changes); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, mapErr(err, "update job")
	}
	return after, nil
}

// runsAheadSQL are the runs of a job created ahead that an edit may take
// back (see dropRunsAhead, which explains the leased ones): pending, never
// attempted, not yet available, or claimed ahead and not started.
const runsAheadSQL = `status IN ('pending', 'leased') AND trigger = 'schedule' AND available_at > now()
	AND (status = 'pending' AND attempt_count = 0
	     OR status = 'leased' AND attempt_count = 1 AND started_at IS NULL
	        AND available_at > clock_timestamp())`

// dropRunsAhead deletes the job's runs created ahead (pending, never
// attempted, not yet available) that its edited plan no longer holds, and
// returns the scheduled instants it deleted and the latest it kept. A
// pause, or any change to a one-shot, deletes them all. An edit of an
// enabled cron job keeps each run whose occurrence the new plan still
// contains: among them a jittered occurrence whose instant has passed but
// whose jittered fire time has not, which the new plan's next occurrence
// (after now) would otherwise never bring back.
func dropRunsAhead(ctx context.Context, tx pgx.Tx, j *chronos.Job, c scheduleChange) (dropped []time.Time, kept *time.Time, err error) {
	// With the runs created ahead go those claimed ahead of their instant
	// that no worker has started (see ClaimAhead and StartAhead): locking
	// them waits for a worker's StartAhead in flight, and a worker whose
	// run is gone does not send it. Once this PATCH is answered, no run of
	// the old plan starts.
	//
	// A leased run is one claimed ahead only if its instant is still ahead
	// when this statement reads it (clock_timestamp(), evaluated again
	// when the row is read after a claim that held it commits), not
	// merely ahead of this transaction's start (now()): a claim that
	// began after that start, or whose statement reached the instant
	// while it ran, hands the run out as due (Wait zero) and the worker
	// sends it at once, without StartAhead; deleting it then lost the
	// record of a run that was delivered. A run read ahead of the clock
	// after its claim committed was claimed with a Wait, so its worker
	// calls StartAhead, which fails once the run is gone.
	const ahead = "job_id = $1 AND " + runsAheadSQL
	var sched *chronos.Schedule
	if !c.pausing && j.Enabled && j.CronExpr != nil {
		sched, _ = j.Schedule() // nil (an invalid schedule) keeps nothing
	}
	if sched == nil {
		rows, err := tx.Query(ctx, "DELETE FROM job_runs WHERE "+ahead+" RETURNING scheduled_at", j.ID)
		if err != nil {
			return nil, nil, mapErr(err, "update job: drop runs created ahead")
		}
		dropped, err = pgx.CollectRows(rows, pgx.RowTo[time.Time])
		return dropped, nil, mapErr(err, "update job: drop runs created ahead")
	}
	rows, err := tx.Query(ctx, "SELECT id, scheduled_at FROM job_runs WHERE "+ahead+" FOR UPDATE", j.ID)
	if err != nil {
		return nil, nil, mapErr(err, "update job: runs created ahead")
	}
	var (
		id   int64
		at   time.Time
		drop []int64
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &at}, func() error {
		at = at.UTC()
		if x, ok := sched.Next(at.Add(-time.Nanosecond)); ok && x.Equal(at) {
			if kept == nil || at.After(*kept) {
				k := at
				kept = &k
			}
			return nil
		}
		drop = append(drop, id)
		dropped = append(dropped, at)
		return nil
	})
	if err != nil {
		return nil, nil, mapErr(err, "update job: runs created ahead")
	}
	if len(drop) > 0 {
		if _, err := tx.Exec(ctx, "DELETE FROM job_runs WHERE id = ANY($1)", drop); err != nil {
			return nil, nil, mapErr(err, "update job: drop runs created ahead")
		}
	}
	return dropped, kept, nil
}

// scheduleChange is what a PATCH did to a job's schedule.
type scheduleChange struct {
	cron     bool // cron_expr changed (set, cleared or edited)
	schedule bool // the occurrences changed: cron_expr, run_at, or a cron job's time zone
	pausing  bool // enabled went from true to false
	resuming bool // enabled went from false to true
}

// scheduleChangeOf compares a job before and after a PATCH. Setting a field
// to the value it has changes nothing.
func scheduleChangeOf(before, after *chronos.Job) scheduleChange {
	var c scheduleChange
	c.cron = !equalPtr(before.CronExpr, after.CronExpr)
	runAt := !equalTimePtr(before.RunAt, after.RunAt)
	zone := before.Timezone != after.Timezone && after.CronExpr != nil
	// The timetable's bounds and exclusions change its occurrences too.
	window := !equalTimePtr(before.StartsAt, after.StartsAt) || !equalTimePtr(before.EndsAt, after.EndsAt) ||
		!slices.Equal(before.Exclude, after.Exclude) ||
		!slices.Equal(before.Calendars, after.Calendars) || before.CalendarPolicy != after.CalendarPolicy
	c.schedule = c.cron || runAt || zone || (window && after.CronExpr != nil)
	c.pausing = before.Enabled && !after.Enabled
	c.resuming = !before.Enabled && after.Enabled
	return c
}

// nextAfterUpdate is the next_run_at to store after an update of old into
// j (see UpdateJob): rawNext is the stored value before it, dropped the
// scheduled instants of the runs created ahead that it deleted, now the
// database's clock.
func nextAfterUpdate(old, j *chronos.Job, c scheduleChange, rawNext *time.Time, dropped []time.Time, now time.Time) (*time.Time, error) {
	if j.CronExpr != nil {
		if !j.Enabled {
			return nil, nil
		}
		if !c.schedule && !c.resuming {
			return rawNext, nil
		}
		next, err := j.NextRun(now)
		if err != nil {
			if c.cron && chronos.ErrorCode(err) != chronos.EINVALID {
				return nil, chronos.InvalidFields(map[string]string{"cron_expr": err.Error()})
			}
			return nil, nil // an exhausted schedule (or past ends_at): the job is finished
		}
		if x := jitteredPending(old, j, c, rawNext, now); x != nil {
			return x, nil
		}
		return next, nil
	}
	runAt := j.RunAt.UTC()
	if c.schedule {
		return &runAt, nil // a new run_at is a new occurrence
	}
	for _, t := range dropped {
		if t.Equal(runAt) {
			return &runAt, nil // its run created ahead is gone: not fired yet
		}
	}
	return rawNext, nil
}

// jitteredPending is the occurrence of an edited, enabled cron job whose
// instant has passed but whose jittered fire time has not, when no run
// stands for it yet (the job is behind: its stored next_run_at, the first
// occurrence not materialized, is not after now; the leader had not come
// round to it, or its overlap policy deferred it to its instant), and
// both the old plan and the new one have it: the schedule goes on from
// there, not from the first occurrence after now, so the edit does not
// lose it (issue 22 item 4; dropRunsAhead keeps those that have a run).
// nil when there is none. A resume is not an edit of a running plan: it
// starts after now.
func jitteredPending(old, j *chronos.Job, c scheduleChange, rawNext *time.Time, now time.Time) *time.Time {
	if j.JitterSeconds <= 0 || c.resuming || rawNext == nil || rawNext.After(now) || old.CronExpr == nil {
		return nil
	}
	sched, err := j.Schedule()
	if err != nil {
		return nil
	}
	was, err := old.Schedule()
	if err != nil {
		return nil
	}
	from := rawNext.UTC()
	if earliest := now.Add(-time.Duration(j.JitterSeconds) * time.Second); from.Before(earliest) {
		from = earliest
	}
	for x, ok := sched.Next(from.Add(-time.Nanosecond)); ok && !x.After(now); x, ok = sched.Next(x) {
		if o, ok := was.Next(x.Add(-time.Nanosecond)); ok && o.Equal(x) && j.FireAt(x).After(now) {
			return &x
		}
	}
	return nil
}

func equalPtr[T comparable](a, b *T) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

func equalTimePtr(a, b *time.Time) bool {
	return a == nil && b == nil || a != nil && b != nil && a.Equal(*b)
}

// Now reads the database's clock, the one every scheduling decision uses
// (the previews start from it).
func (db *DB) Now(ctx context.Context) (time.Time, error) {
	t, err := db.now(ctx)
	if err != nil {
		return time.Time{}, mapErr(err, "read the clock")
	}
	return t, nil
}

// now reads the database's clock.
func (db *DB) now(ctx context.Context) (time.Time, error) {
	var t time.Time
	err := db.Pool.QueryRow(ctx, "SELECT now()").Scan(&t)
	return t.UTC(), err
}

// DeleteJob deletes a job and its runs, and records it in the job's
// audit history, which outlives it. ENOTFOUND. A deadlock or
// serialization failure is retried (see retryTx).
func (db *DB) DeleteJob(ctx context.Context, id int64) error {
	_, err := retryTx(ctx, func() (struct{}, error) { return struct{}{}, db.deleteJob(ctx, id) })
	return err
}

// deleteJob is one attempt of DeleteJob.
//
// The DELETE takes FOR UPDATE on the job's row and then (the cascade)
// every run of the job. A claim or a completion holds a run and then
// takes FOR KEY SHARE on the job's row (the foreign key of the overlap
// lock row it inserts): a bare DELETE that waited for such a run while
// holding the job's row deadlocked with it. So the rows are locked first
// in the order every writer takes them: the job's row FOR NO KEY UPDATE
// (which a claim's FOR KEY SHARE does not wait for; a PATCH does), its
// schedule row (the materializer's), its runs (the claims' and
// completions'), and only then is the job deleted.
func (db *DB) deleteJob(ctx context.Context, id int64) error {
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("delete job: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	var found bool
	err = tx.QueryRow(ctx, "SELECT true FROM jobs WHERE id = $1 FOR NO KEY UPDATE", id).Scan(&found)
	if errors.Is(err, pgx.ErrNoRows) {
		return jobNotFound(id)
	}
	if err != nil {
		return mapErr(err, "delete job: lock the job")
	}
	if _, err := tx.Exec(ctx, "SELECT 1 FROM job_schedules WHERE job_id = $1 FOR UPDATE", id); err != nil {
		return mapErr(err, "delete job: lock its schedule")
	}
	if _, err := tx.Exec(ctx, "SELECT 1 FROM job_runs WHERE job_id = $1 FOR UPDATE", id); err != nil {
		return mapErr(err, "delete job: lock its runs")
	}
	// Its calendars, for the audit entry: their rows go with the job.
	cals := &chronos.Job{ID: id}
	if err := attachCalendars(ctx, tx, []*chronos.Job{cals}, nil); err != nil {
		return err
	}
	j, err := scanJob(tx.QueryRow(ctx, "DELETE FROM jobs WHERE id = $1 RETURNING "+jobColumns, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return jobNotFound(id)
	}
	if err != nil {
		return mapErr(err, "delete job")
	}
	j.Calendars, j.CalendarPolicy = cals.Calendars, cals.CalendarPolicy
	if err := recordAudit(ctx, tx, id, chronos.AuditDelete, nil, chronos.JobChanges(j, nil)); err != nil {
		return err
	}
	return mapErr(tx.Commit(ctx), "delete job")
}
