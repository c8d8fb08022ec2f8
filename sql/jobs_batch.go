package sql

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// MaxJobBatch is the most jobs CreateJobs takes at once (POST
// /v1/jobs/batch): 30 parameters a job keep a batch far below Postgres's
// 65,535 bind parameters.
const MaxJobBatch = 1000

// jobInsertColumns are the columns of a created job, in the order of
// jobArgs, secretHeadersArg, signing secrets, policyArgs, then created_at
// (twice: updated_at too), description, labels, on_dead_url, limit_key.
const jobInsertColumns = `name, cron_expr, run_at, timezone, target_url, method, headers, payload,
	timeout_seconds, max_retries, backoff, backoff_base_seconds, backoff_max_seconds,
	overlap, enabled, next_run_at, secret_headers, signing_secrets, starts_at, ends_at, misfire,
	starting_deadline_seconds, jitter_seconds, exclude, created_at, updated_at, description, labels,
	on_dead_url, limit_key`

// jobArgCount is the number of arguments of one job in insertJobs.
const jobArgCount = 31

// preparedJob is a validated job and the arguments of its row.
type preparedJob struct {
	j    *chronos.Job
	args []any
}

// prepareJob validates j against the database's clock now (defaults
// applied), computes next_run_at and returns its row's arguments: what
// CreateJob did before its INSERT, shared by every create.
func prepareJob(ctx context.Context, j *chronos.Job, now time.Time) ([]any, error) {
	j.ApplyDefaults()
	if err := j.Validate(); err != nil {
		return nil, err
	}
	if j.RunAt != nil {
		t := j.RunAt.UTC()
		j.RunAt = &t
	}
	// created_at is the database's clock too: "@every" intervals count
	// from it.
	j.CreatedAt = now.Truncate(time.Microsecond)
	if err := j.ValidateSchedule(now); err != nil {
		return nil, err
	}
	next, err := j.NextRun(now)
	if err != nil {
		if chronos.ErrorCode(err) == chronos.EINVALID {
			return nil, err // names the field: cron_expr, timezone, exclude
		}
		return nil, chronos.InvalidFields(map[string]string{"cron_expr": err.Error()})
	}
	if !j.Enabled && j.CronExpr != nil {
		next = nil // a paused cron job has no next run; resuming starts from then
	}
	args := append(append(jobArgs(j, next), secretHeadersArg(j), toStored(j.SigningSecrets)), policyArgs(j)...)
	return append(args, j.CreatedAt, j.Description, labelsArg(j), chronos.ActorFrom(ctx),
		chronos.CreationChanges(j), j.OnDeadURL, j.LimitKey), nil
}

// insertJobsSQL is the statement that inserts n jobs, their schedule rows
// and their first audit entries at once. A job whose name is taken (by a
// stored job or an earlier job of the batch) is skipped, not an error: the
// caller finds it missing from the result, so one taken name fails one job
// only. The schedule rows and audit entries join the inserted rows by
// name, which the unique index makes a key. next_run_at goes to the
// schedule row only (jobs' column is the old shape's, kept null): the
// insert trigger's row for each job then finds this one and keeps it.
func insertJobsSQL(n int) string {
	var b strings.Builder
	b.WriteString("WITH ins AS (\n\tINSERT INTO jobs (" + jobInsertColumns + ")\n\tVALUES ")
	p := func(o, k int) string { return "$" + strconv.Itoa(o+k) }
	for i := range n {
		o := i * jobArgCount
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(")
		for k := 1; k <= 24; k++ {
			if k == 16 {
				b.WriteString("NULL, ") // next_run_at: see job_schedules below
				continue
			}
			b.WriteString(p(o, k) + ", ")
		}
		// created_at, updated_at, description, labels, on_dead_url, limit_key
		b.WriteString(p(o, 25) + ", " + p(o, 25) + ", " + p(o, 26) + ", " + p(o, 27) + ", " + p(o, 30) + ", " + p(o, 31) + ")")
	}
	b.WriteString("\n\tON CONFLICT DO NOTHING\n\tRETURNING id, name, enabled, cron_expr, created_at, updated_at\n), v AS (\n" +
		"\tSELECT * FROM (VALUES ")
	for i := range n {
		o := i * jobArgCount
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(" + p(o, 1) + "::text, " + p(o, 16) + "::timestamptz, " + p(o, 28) + "::text, " + p(o, 29) + "::jsonb)")
	}
	b.WriteString(") v (name, next_run_at, actor, changes)\n), sched AS (\n" +
		"\tINSERT INTO job_schedules (job_id, enabled, cron, next_run_at)\n" +
		"\tSELECT ins.id, ins.enabled, ins.cron_expr IS NOT NULL, v.next_run_at FROM ins JOIN v ON v.name = ins.name\n), audit AS (\n" +
		"\tINSERT INTO job_audit (job_id, action, actor, changes)\n" +
		"\tSELECT ins.id, 'create', v.actor, v.changes FROM ins JOIN v ON v.name = ins.name\n)\n" +
		"SELECT ins.id, ins.name, v.next_run_at, ins.created_at, ins.updated_at FROM ins JOIN v ON v.name = ins.name")
	return b.String()
}

// preparedStatementMax is the largest batch whose statement is kept in
// pgx's per-connection statement cache; larger ones (the batch route's,
// of any size up to MaxJobBatch) are described and run without caching,
// so they do not crowd out the hot statements.
const preparedStatementMax = 64

// insertJobs inserts validated jobs in one statement on q and fills each
// inserted job's id, next_run_at and timestamps. It returns, per job,
// nil or the ECONFLICT of a taken name. Names must be distinct within
// jobs (see distinctNames).
func insertJobs(ctx context.Context, q querier, jobs []preparedJob) ([]error, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	args := make([]any, 0, len(jobs)*jobArgCount+1)
	if len(jobs) > preparedStatementMax {
		args = append(args, pgx.QueryExecModeDescribeExec)
	}
	byName := make(map[string]int, len(jobs))
	for i, p := range jobs {
		args = append(args, p.args...)
		byName[p.j.Name] = i
	}
	rows, err := q.Query(ctx, insertJobsSQL(len(jobs)), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	done := make([]bool, len(jobs))
	for rows.Next() {
		var (
			id         int64
			name       string
			next       *time.Time
			created, u time.Time
		)
		if err := rows.Scan(&id, &name, &next, &created, &u); err != nil {
			return nil, err
		}
		i, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("insert jobs: the database returned a job named %q that was not sent", name)
		}
		j := jobs[i].j
		j.ID, j.NextRunAt, j.CreatedAt, j.UpdatedAt = id, next, created.UTC(), u.UTC()
		utcPtr(&j.NextRunAt)
		j.State = chronos.StateOf(j.Enabled, j.NextRunAt)
		done[i] = true
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	errs := make([]error, len(jobs))
	for i := range jobs {
		if !done[i] {
			errs[i] = nameTaken("create job")
		}
	}
	return errs, nil
}

// nameTaken is the error of a create whose name another job has, as
// mapErr reports the unique index's violation.
func nameTaken(what string) error {
	return &chronos.Error{Code: chronos.ECONFLICT, Message: what + ": a job with this name already exists",
		Fields: map[string]string{"name": "is taken by another job"}}
}

// querier is what a statement runs on: the pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// notifyCreatedJobs announces created jobs on chronos_jobs, one
// notification each, in one statement after their commit (see
// notifyCreated for why not in the transaction).
func (db *DB) notifyCreatedJobs(ctx context.Context, jobs []*chronos.Job) {
	ids := make([]int64, 0, len(jobs))
	for _, j := range jobs {
		if j.ID != 0 {
			ids = append(ids, j.ID)
		}
	}
	switch len(ids) {
	case 0:
		return
	case 1:
		db.notifyCreated(ctx, ids[0])
		return
	}
	_, err := db.Pool.Exec(context.WithoutCancel(ctx),
		`SELECT pg_notify('chronos_jobs', '{"op":"created","job_id":' || id || '}') FROM unnest($1::bigint[]) id`, ids)
	if err != nil {
		slog.Default().Warn("notify created jobs", "jobs", len(ids), "err", err)
	}
}

// CreateJobs stores up to MaxJobBatch jobs all or nothing, in one
// transaction with one multi-row insert, and fills each job's id,
// next_run_at and timestamps. A job that is invalid or whose name is taken
// (also by an earlier job of the batch) fails the batch: the error is an
// EINVALID (or ECONFLICT when only names are taken) whose fields name each
// failing job's field as "jobs[i].field". The transaction also stores an
// Idempotency-Key's answer (see WithIdempotency).
func (db *DB) CreateJobs(ctx context.Context, jobs []*chronos.Job) error {
	if len(jobs) == 0 {
		return chronos.InvalidFields(map[string]string{"jobs": "at least one job is required"})
	}
	if len(jobs) > MaxJobBatch {
		return chronos.InvalidFields(map[string]string{"jobs": "at most " + strconv.Itoa(MaxJobBatch) + " jobs per batch"})
	}
	// prepareJob validates each job (defaults applied) against the
	// database's clock: every job's mistakes are reported at once.
	errs := map[int]error{}
	err := db.guarded(ctx, true, func(tx querier) ([]any, error) {
		var now time.Time
		if err := tx.QueryRow(ctx, "SELECT now()").Scan(&now); err != nil {
			return nil, err
		}
		now = now.UTC()
		cerrs, err := resolveCalendars(ctx, tx, jobs)
		if err != nil {
			return nil, err
		}
		prepared := make([]preparedJob, len(jobs))
		for i, j := range jobs {
			if j == nil {
				errs[i] = chronos.InvalidFields(map[string]string{"body": "a job is required"})
				continue
			}
			if cerrs[i] != nil {
				errs[i] = cerrs[i]
				continue
			}
			args, err := prepareJob(ctx, j, now)
			if err != nil {
				errs[i] = err
				continue
			}
			prepared[i] = preparedJob{j: j, args: args}
		}
		for i, dup := range distinctNames(prepared) {
			if dup {
				errs[i] = nameTaken("create job")
			}
		}
		if err := checkLimitKeys(ctx, tx, prepared, errs); err != nil {
			return nil, err
		}
		// The rest are inserted even when some failed, to name every
		// taken name at once; a failure rolls them back.
		rest, index := make([]preparedJob, 0, len(prepared)), make([]int, 0, len(prepared))
		for i, p := range prepared {
			if errs[i] == nil {
				rest, index = append(rest, p), append(index, i)
			}
		}
		perJob, err := insertJobs(ctx, tx, rest)
		if err != nil {
			return nil, err
		}
		for k, err := range perJob {
			if err != nil {
				errs[index[k]] = err
			}
		}
		if len(errs) > 0 {
			return nil, batchError(errs) // rolls the batch back
		}
		if err := writeCalendars(ctx, tx, jobs, false); err != nil {
			return nil, err
		}
		return []any{jobs}, nil
	})
	if err != nil {
		return mapErr(err, "create jobs")
	}
	db.notifyCreatedJobs(ctx, jobs)
	return nil
}

// distinctNames reports, per job, whether an earlier job of the batch has
// its name (such a job would be skipped by the insert's ON CONFLICT).
// Jobs without arguments (failed before) are ignored.
func distinctNames(jobs []preparedJob) []bool {
	seen := make(map[string]bool, len(jobs))
	dup := make([]bool, len(jobs))
	for i, p := range jobs {
		if p.args == nil {
			continue
		}
		if seen[p.j.Name] {
			dup[i] = true
		}
		seen[p.j.Name] = true
	}
	return dup
}

// batchError merges per-job errors into one: each failing job's fields
// prefixed with "jobs[i].". EINVALID when any job is invalid, ECONFLICT
// when the only failures are taken names.
func batchError(errs map[int]error) error {
	code := chronos.ECONFLICT
	fields := map[string]string{}
	for i, err := range errs {
		var e *chronos.Error
		if !errors.As(err, &e) || e.Code == chronos.EINTERNAL || e.Code == chronos.EUNAVAILABLE {
			return err // not the caller's mistake
		}
		if e.Code != chronos.ECONFLICT {
			code = chronos.EINVALID
		}
		prefix := "jobs[" + strconv.Itoa(i) + "]"
		if len(e.Fields) == 0 {
			fields[prefix] = e.Message
		}
		for f, msg := range e.Fields {
			fields[prefix+"."+f] = msg
		}
	}
	out := chronos.InvalidFields(fields)
	out.Code = code
	if code == chronos.ECONFLICT {
		out.Message = "jobs with these names already exist: " + strings.TrimPrefix(out.Message, "invalid ")
	}
	return out
}
