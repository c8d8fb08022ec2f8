package sql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// MaxJobBatch is the most jobs CreateJobs takes at once (POST
// /v1/jobs/batch).
const MaxJobBatch = 1000

// preparedJob is a validated job and what its row needs besides the job's
// own fields. A zero row marks a job that failed before its insert.
type preparedJob struct {
	j   *chronos.Job
	row *jobRow
}

// jobRow is what prepareJob computes for a job's insert: its next run (on
// the database's clock), and its first audit entry.
type jobRow struct {
	next    *time.Time
	early   *time.Time // materialize_at: see firstEarlyAt
	actor   string
	changes string
}

// prepareJob validates j against the database's clock now (defaults
// applied), computes next_run_at and its audit entry: what CreateJob did
// before its INSERT, shared by every create.
func prepareJob(ctx context.Context, j *chronos.Job, now time.Time) (*jobRow, error) {
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
	return &jobRow{next: next, early: firstEarlyAt(j, next), actor: chronos.ActorFrom(ctx), changes: chronos.CreationChanges(j)}, nil
}

// insertJobsSQL is the statement that inserts jobs, their schedule rows
// and their first audit entries at once. A job whose name is taken (by a
// stored job or an earlier job of the batch) is skipped, not an error: the
// caller finds it missing from the result, so one taken name fails one job
// only. The schedule rows and audit entries join the inserted rows by
// name, which the unique index makes a key. next_run_at goes to the
// schedule row only (jobs' column is the old shape's, kept null): the
// insert trigger's row for each job then finds this one and keeps it.
// The audit entry's fields go to its creation column as json (migration
// 039): parsed into jsonb they cost Postgres a sixth of the insert.
//
// The jobs come as one array per column (insertArgs), not as a VALUES row
// of parameters per job: the text is the same for any number of jobs, so
// each connection parses and plans it once, where a VALUES list of a
// thousand rows (31,000 parameters) took longer to parse and plan than to
// run. JSON columns come as text and secret_headers as array literals
// (arrays of arrays cannot be ragged), cast row by row.
const insertJobsSQL = `WITH v AS (
	SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::text[], $6::text[],
		$7::text[], $8::text[], $9::int[], $10::int[], $11::text[], $12::float8[], $13::float8[], $14::text[],
		$15::bool[], $16::timestamptz[], $17::text[], $18::text[], $19::timestamptz[], $20::timestamptz[],
		$21::text[], $22::int[], $23::int[], $24::text[], $25::text[], $26::text[], $27::text[], $28::text[],
		$29::text[], $30::text[]) WITH ORDINALITY
	AS v (name, cron_expr, run_at, timezone, target_url, method, headers, payload, timeout_seconds,
		max_retries, backoff, backoff_base_seconds, backoff_max_seconds, overlap, enabled, next_run_at,
		secret_headers, signing_secrets, starts_at, ends_at, misfire, starting_deadline_seconds,
		jitter_seconds, exclude, description, labels, actor, changes, on_dead_url, limit_key, ord)
), ins AS (
	INSERT INTO jobs (` + jobInsertColumns + `)
	SELECT name, cron_expr, run_at, timezone, target_url, method, headers::jsonb, payload::json,
		timeout_seconds, max_retries, backoff, backoff_base_seconds, backoff_max_seconds, overlap, enabled,
		NULL, secret_headers::text[], signing_secrets::jsonb, starts_at, ends_at, misfire,
		starting_deadline_seconds, jitter_seconds, exclude::jsonb, $31, $31, description, labels::jsonb,
		on_dead_url, limit_key
	  FROM v ORDER BY ord
	ON CONFLICT DO NOTHING
	RETURNING id, name, enabled, cron_expr, created_at, updated_at
), sched AS (
	INSERT INTO job_schedules (job_id, enabled, cron, next_run_at, materialize_at)
	SELECT ins.id, ins.enabled, ins.cron_expr IS NOT NULL, v.next_run_at, ($32::timestamptz[])[v.ord]
	  FROM ins JOIN v ON v.name = ins.name
), audit AS (
	INSERT INTO job_audit (job_id, action, actor, creation)
	SELECT ins.id, 'create', v.actor, v.changes::json FROM ins JOIN v ON v.name = ins.name
)
SELECT ins.id, ins.name, v.next_run_at, ins.created_at, ins.updated_at FROM ins JOIN v ON v.name = ins.name`

// jobInsertColumns are the columns insertJobsSQL fills, in its order.
const jobInsertColumns = `name, cron_expr, run_at, timezone, target_url, method, headers, payload,
	timeout_seconds, max_retries, backoff, backoff_base_seconds, backoff_max_seconds,
	overlap, enabled, next_run_at, secret_headers, signing_secrets, starts_at, ends_at, misfire,
	starting_deadline_seconds, jitter_seconds, exclude, created_at, updated_at, description, labels,
	on_dead_url, limit_key`

// insertJobs inserts validated jobs in one statement on q and fills each
// inserted job's id, next_run_at and timestamps. It returns, per job,
// nil or the ECONFLICT of a taken name. Names must be distinct within
// jobs (see distinctNames), and all of them prepared at the same instant
// (created_at is one for the statement).
func insertJobs(ctx context.Context, q querier, jobs []preparedJob) ([]error, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	args, err := insertArgs(jobs)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]int, len(jobs))
	for i, p := range jobs {
		byName[p.j.Name] = i
	}
	rows, err := q.Query(ctx, insertJobsSQL, args...)
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

// insertArgs are insertJobsSQL's arguments for jobs: one array per
// column, then created_at. JSON values are encoded as pgx encodes them
// for a jsonb parameter (json.Marshal; a nil map as NULL).
func insertArgs(jobs []preparedJob) ([]any, error) {
	n := len(jobs)
	var (
		name, tz, target, method, backoff, overlap, misfire, descr, actor = make([]string, n), make([]string, n),
			make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n),
			make([]string, n), make([]string, n)
		cron, headers, payload, secretHeaders, signing, exclude, labels, changes, onDead, limitKey = make([]*string, n),
			make([]*string, n), make([]*string, n), make([]string, n), make([]string, n), make([]string, n),
			make([]string, n), make([]string, n), make([]*string, n), make([]*string, n)
		runAt, next, startsAt, endsAt, early = make([]*time.Time, n), make([]*time.Time, n), make([]*time.Time, n),
			make([]*time.Time, n), make([]*time.Time, n)
		timeout, retries, jitter = make([]int, n), make([]int, n), make([]int, n)
		deadline                 = make([]*int, n)
		base, maxBackoff         = make([]float64, n), make([]float64, n)
		enabled                  = make([]bool, n)
	)
	for i, p := range jobs {
		j := p.j
		name[i], cron[i], runAt[i], tz[i], target[i], method[i] = j.Name, j.CronExpr, j.RunAt, j.Timezone, j.TargetURL, j.Method
		if j.Headers != nil {
			h, err := jsonText(j.Headers, len(j.Headers), "{}", "headers")
			if err != nil {
				return nil, err
			}
			headers[i] = &h
		}
		if len(j.Payload) > 0 {
			ps := string(j.Payload) // byte for byte: the column is json
			payload[i] = &ps
		}
		timeout[i], retries[i], backoff[i], base[i], maxBackoff[i] = j.TimeoutSeconds, j.MaxRetries, string(j.Backoff),
			j.BackoffBaseSeconds, j.BackoffMaxSeconds
		overlap[i], enabled[i], next[i], early[i] = string(j.Overlap), j.Enabled, p.row.next, p.row.early
		secretHeaders[i] = textArrayLiteral(secretHeadersArg(j))
		s, err := jsonText(toStored(j.SigningSecrets), len(j.SigningSecrets), "[]", "signing secrets")
		if err != nil {
			return nil, err
		}
		signing[i] = s
		startsAt[i], endsAt[i], misfire[i], deadline[i], jitter[i] = j.StartsAt, j.EndsAt, string(j.Misfire),
			j.StartingDeadlineSeconds, j.JitterSeconds
		if exclude[i], err = jsonText(j.Exclude, len(j.Exclude), "[]", "exclude"); err != nil {
			return nil, err
		}
		descr[i] = j.Description
		if labels[i], err = jsonText(j.Labels, len(j.Labels), "{}", "labels"); err != nil {
			return nil, err
		}
		actor[i], changes[i], onDead[i], limitKey[i] = p.row.actor, p.row.changes, j.OnDeadURL, j.LimitKey
	}
	return []any{name, cron, runAt, tz, target, method, headers, payload, timeout, retries, backoff, base,
		maxBackoff, overlap, enabled, next, secretHeaders, signing, startsAt, endsAt, misfire, deadline, jitter,
		exclude, descr, labels, actor, changes, onDead, limitKey, jobs[0].j.CreatedAt, early}, nil
}

// jsonText is v, a map or list of n members, as JSON text: empty when n
// is zero (an absent one is stored empty too), without encoding it, as
// most jobs' headers, labels, exclusions and signing secrets are;
// otherwise as json.Marshal writes it (and pgx would, for a jsonb
// parameter).
func jsonText(v any, n int, empty, what string) (string, error) {
	if n == 0 {
		return empty, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("insert jobs: encode %s: %w", what, err)
	}
	return string(raw), nil
}

// textArrayLiteral is ss as a Postgres array literal ('{"a","b"}'), every
// element quoted so that none reads as NULL.
func textArrayLiteral(ss []string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, s := range ss {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		for _, r := range s {
			if r == '"' || r == '\\' {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		}
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
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
			row, err := prepareJob(ctx, j, now)
			if err != nil {
				errs[i] = err
				continue
			}
			prepared[i] = preparedJob{j: j, row: row}
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
	db.notifyCreated(ctx, jobs...)
	return nil
}

// distinctNames reports, per job, whether an earlier job of the batch has
// its name (such a job would be skipped by the insert's ON CONFLICT).
// Jobs without arguments (failed before) are ignored.
func distinctNames(jobs []preparedJob) []bool {
	seen := make(map[string]bool, len(jobs))
	dup := make([]bool, len(jobs))
	for i, p := range jobs {
		if p.row == nil {
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
