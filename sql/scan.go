package sql

import (
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chronoshq/chronos"
)

// scanOne reads a row of one column (a collect scan).
func scanOne[T any](r scanner) (T, error) {
	var v T
	err := r.Scan(&v)
	return v, err
}

// eachRow scans each row of a query's rows into dest and calls fn after
// it; an error of the query (err, as Query returned it), of a row or of
// rows is mapped with what. rows is closed.
func eachRow(rows pgx.Rows, err error, what string, dest []any, fn func()) error {
	if err != nil {
		return mapErr(err, what)
	}
	if _, err := pgx.ForEachRow(rows, dest, func() error { fn(); return nil }); err != nil {
		return mapErr(err, what)
	}
	return nil
}

// collect reads every row of a query's rows with scan; an error of the
// query (err, as Query returned it) or of a row is mapped alike, with what
// for context.
func collect[T any](rows pgx.Rows, err error, what string, scan func(scanner) (T, error)) ([]T, error) {
	if err != nil {
		return nil, mapErr(err, what)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (T, error) { return scan(r) })
	if err != nil {
		return nil, mapErr(err, what)
	}
	return out, nil
}

// Column lists, in the order the scan helpers below expect.
const (
	jobColumns = "id, name, cron_expr, run_at, timezone, target_url, method, headers, payload, " +
		"timeout_seconds, max_retries, backoff, backoff_base_seconds, backoff_max_seconds, overlap, " +
		"enabled, " + nextRunAtColumn + ", created_at, updated_at, secret_headers, signing_secrets, starts_at, ends_at, misfire, " +
		"starting_deadline_seconds, jitter_seconds, exclude, description, labels, on_dead_url, limit_key"
	runColumns = "id, job_id, scheduled_at, trigger, catch_up, redrive_of, status, attempt_count, " +
		"available_at, leased_by, leased_until, started_at, finished_at, last_error, last_status_code, created_at, fire_at"
	attemptColumns = "run_id, attempt, worker_id, started_at, finished_at, status_code, error, response_body, duration_ms"
	// scheduleColumns are what planning a job's occurrences reads (see
	// scanSchedule): the materializer reads thousands of jobs per second
	// at the top of an hour and needs neither their payloads, headers,
	// secrets nor labels.
	scheduleColumns = "j.id, j.cron_expr, j.run_at, j.timezone, j.overlap, s.enabled, s.next_run_at, j.created_at, " +
		"j.starts_at, j.ends_at, j.misfire, j.starting_deadline_seconds, j.jitter_seconds, j.exclude"
	// nextRunAtColumn is a job's next_run_at, which lives in its schedule
	// row (job_schedules, see the package doc), for a query on jobs
	// unaliased; qualified rewrites it for an alias.
	nextRunAtColumn = "(SELECT s.next_run_at FROM job_schedules s WHERE s.job_id = jobs.id) AS next_run_at"
)

// qualified prefixes every column of cols with alias.
func qualified(alias, cols string) string {
	parts := strings.Split(cols, ", ")
	for i, p := range parts {
		if p == nextRunAtColumn {
			parts[i] = strings.Replace(p, "jobs.id", alias+".id", 1)
			continue
		}
		parts[i] = alias + "." + p
	}
	return strings.Join(parts, ", ")
}

// scanner is pgx.Row or pgx.Rows.
type scanner interface{ Scan(dest ...any) error }

// jobScan holds the destinations of one job row.
type jobScan struct {
	j       chronos.Job
	payload []byte
	secrets []storedSecret
}

func (s *jobScan) dest() []any {
	j := &s.j
	return []any{&j.ID, &j.Name, &j.CronExpr, &j.RunAt, &j.Timezone, &j.TargetURL, &j.Method, &j.Headers,
		&s.payload, &j.TimeoutSeconds, &j.MaxRetries, &j.Backoff, &j.BackoffBaseSeconds, &j.BackoffMaxSeconds,
		&j.Overlap, &j.Enabled, &j.NextRunAt, &j.CreatedAt, &j.UpdatedAt, &j.SecretHeaders, &s.secrets, &j.StartsAt,
		&j.EndsAt, &j.Misfire, &j.StartingDeadlineSeconds, &j.JitterSeconds, &j.Exclude, &j.Description, &j.Labels,
		&j.OnDeadURL, &j.LimitKey}
}

func (s *jobScan) job() *chronos.Job {
	j := s.j
	if s.payload != nil {
		j.Payload = append([]byte(nil), s.payload...)
	}
	if j.Headers == nil {
		j.Headers = map[string]string{}
	}
	if j.Exclude == nil {
		j.Exclude = []chronos.DateRange{}
	}
	if j.Calendars == nil { // attachCalendars reads them (job_calendars)
		j.Calendars, j.CalendarPolicy = []string{}, chronos.CalendarSkip
	}
	if j.SecretHeaders == nil {
		j.SecretHeaders = []string{}
	}
	if j.Labels == nil {
		j.Labels = map[string]string{}
	}
	j.SigningSecrets = fromStored(s.secrets)
	utcPtr(&j.RunAt)
	utcPtr(&j.NextRunAt)
	utcPtr(&j.StartsAt)
	utcPtr(&j.EndsAt)
	if !j.Enabled {
		// A paused job has no next run. (A paused one-shot keeps its
		// run_at stored, so resuming it still fires it: see UpdateJob.)
		j.NextRunAt = nil
	}
	j.State = chronos.StateOf(j.Enabled, j.NextRunAt)
	j.CreatedAt = j.CreatedAt.UTC()
	j.UpdatedAt = j.UpdatedAt.UTC()
	return &j
}

func scanJob(row scanner) (*chronos.Job, error) {
	var s jobScan
	if err := row.Scan(s.dest()...); err != nil {
		return nil, err
	}
	return s.job(), nil
}

// scanSchedule reads a row of scheduleColumns into a job that holds its
// schedule and policies only.
func scanSchedule(row scanner) (*chronos.Job, error) {
	var j chronos.Job
	if err := row.Scan(&j.ID, &j.CronExpr, &j.RunAt, &j.Timezone, &j.Overlap, &j.Enabled, &j.NextRunAt, &j.CreatedAt,
		&j.StartsAt, &j.EndsAt, &j.Misfire, &j.StartingDeadlineSeconds, &j.JitterSeconds, &j.Exclude); err != nil {
		return nil, err
	}
	if j.Exclude == nil {
		j.Exclude = []chronos.DateRange{}
	}
	utcPtr(&j.RunAt)
	utcPtr(&j.NextRunAt)
	utcPtr(&j.StartsAt)
	utcPtr(&j.EndsAt)
	j.CreatedAt = j.CreatedAt.UTC()
	return &j, nil
}

func runDest(r *chronos.Run) []any {
	return []any{&r.ID, &r.JobID, &r.ScheduledAt, &r.Trigger, &r.CatchUp, &r.RedriveOf, &r.Status,
		&r.AttemptCount, &r.AvailableAt, &r.LeasedBy, &r.LeasedUntil, &r.StartedAt, &r.FinishedAt,
		&r.LastError, &r.LastStatusCode, &r.CreatedAt, &r.FireAt}
}

// normRun puts a scanned run's times in UTC (pgx returns local time).
func normRun(r *chronos.Run) *chronos.Run {
	r.ScheduledAt = r.ScheduledAt.UTC()
	r.AvailableAt = r.AvailableAt.UTC()
	r.CreatedAt = r.CreatedAt.UTC()
	utcPtr(&r.FireAt)
	utcPtr(&r.LeasedUntil)
	utcPtr(&r.StartedAt)
	utcPtr(&r.FinishedAt)
	return r
}

func scanRun(row scanner) (*chronos.Run, error) {
	var r chronos.Run
	if err := row.Scan(runDest(&r)...); err != nil {
		return nil, err
	}
	return normRun(&r), nil
}

func scanAttempt(row scanner) (chronos.Attempt, error) {
	var a chronos.Attempt
	err := row.Scan(&a.RunID, &a.Attempt, &a.WorkerID, &a.StartedAt, &a.FinishedAt, &a.StatusCode,
		&a.Error, &a.ResponseBody, &a.DurationMS)
	a.StartedAt = a.StartedAt.UTC()
	utcPtr(&a.FinishedAt)
	return a, err
}

func utcPtr(p **time.Time) {
	if *p != nil {
		t := (*p).UTC()
		*p = &t
	}
}

// micros is a duration as the bigint the queries multiply by
// interval '1 microsecond'.
func micros(d time.Duration) int64 { return d.Microseconds() }
