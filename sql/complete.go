package sql

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chronoshq/chronos"
	"github.com/jackc/pgx/v5"
)

// Outcome is the result of one attempt.
type Outcome struct {
	Lease
	Success    bool
	StatusCode int    // 0 when no response
	Error      string // "" on success
	Body       string // truncated response body
	// StartedAt and FinishedAt are the worker's readings around the
	// attempt. Only their difference (the duration, on the monotonic
	// clock) is stored: every instant is the database's (see completeSQL).
	StartedAt  time.Time
	FinishedAt time.Time
	RetryDelay time.Duration // on failure with attempts left: wait this long
	// StartRecorded says Start ran for this attempt (it may have created
	// the attempt's run_attempts row). A first attempt that succeeded
	// without it is recorded on the run itself (see completeSQL).
	StartRecorded bool
}

// CompleteResult is the fate of one Outcome.
type CompleteResult struct {
	Status chronos.RunStatus
	Err    error // ErrLeaseLost, or nil
}

// Limits of what an attempt records; longer text is cut at a UTF-8
// boundary. MaxBodyBytes is what a worker needs to read of a response.
const (
	MaxBodyBytes  = 4 << 10
	maxErrorBytes = 2 << 10
)

// completeSQL records a batch of outcomes in one statement over unnest()ed
// arrays: one round trip, one UPDATE, hence one NOTIFY for the batch.
//
// A failure dead-letters when the run has had max_retries+1 attempts
// (attempt_count counts the one just made); otherwise it is pending again
// after the worker's retry delay. The attempt's row is upserted: Start
// created it, unless the worker never got that far. A first attempt that
// succeeded before Start ran (most runs) gets no row: the run's
// first_attempt_* columns, with its started_at, finished_at and
// last_status_code, are its record, and run_attempts_all shows it. That
// saves a row, an index entry and a foreign-key check per run.
//
// One clock: finished_at is the database's now(), as started_at (Start,
// the claim) and every scheduling time are. A worker's wall clock may be
// skewed, so an instant taken from it could put an attempt's end before
// its start. Where no start was recorded (the inline first attempt), the
// start is now() less the worker's measured duration, which is immune to
// skew (Go's monotonic clock).
//
// It returns the runs it finished, each with what recording its attempt
// needs: an outcome the fence refused is not among them. No CTE is joined
// with another, so the statement's one join is the batch's probe of each
// run and its job by key (see QueryPlannedOnce).
var completeSQL = `
	WITH o AS (
		SELECT *, success AND attempt = 1 AND NOT start_recorded AS inline
		  FROM unnest($1::bigint[], $2::text[], $3::int[], $4::bool[], $5::int[], $6::text[],
		              $7::text[], $8::bigint[], $9::bigint[], $10::bool[], $11::timestamptz[])
		       AS o(run_id, worker, attempt, success, status_code, error, body, retry_us, duration_ms, start_recorded,
		            scheduled_at)
	), freed AS (
		UPDATE job_runs r
		   SET status = CASE WHEN o.success THEN 'succeeded'
		                     WHEN r.attempt_count >= ` + attemptsOfJob + ` THEN 'dead'
		                     ELSE 'pending' END,
		       available_at = CASE WHEN o.success OR r.attempt_count >= ` + attemptsOfJob + ` THEN r.available_at
		                           ELSE now() + o.retry_us * interval '1 microsecond' END,
		       finished_at = CASE WHEN o.success OR r.attempt_count >= ` + attemptsOfJob + `
		                          THEN now() END,
		       started_at = COALESCE(r.started_at, now() - greatest(o.duration_ms, 0) * interval '1 millisecond', now()),
		       leased_by = NULL, leased_until = NULL,
		       last_error = o.error, last_status_code = o.status_code,
		       first_attempt_worker = CASE WHEN o.inline THEN o.worker END,
		       first_attempt_body = CASE WHEN o.inline THEN o.body END,
		       first_attempt_ms = CASE WHEN o.inline THEN o.duration_ms END
		  FROM o
		 WHERE ` + fenceEach + `
		RETURNING r.id, r.status, r.limit_key, o.attempt, o.worker, o.status_code, o.error, o.body, o.duration_ms, o.inline
	), ` + limitReleaseCTE + `, recorded AS (
		INSERT INTO run_attempts AS a (run_id, attempt, worker_id, started_at, finished_at, status_code,
		                               error, response_body, duration_ms)
		SELECT f.id, f.attempt, f.worker, COALESCE(now() - greatest(f.duration_ms, 0) * interval '1 millisecond', now()), now(),
		       f.status_code, f.error, f.body, f.duration_ms
		  FROM freed f
		 WHERE NOT f.inline
		ON CONFLICT (run_id, attempt) DO UPDATE
		   SET finished_at = EXCLUDED.finished_at, status_code = EXCLUDED.status_code,
		       error = EXCLUDED.error, response_body = EXCLUDED.response_body,
		       duration_ms = COALESCE(EXCLUDED.duration_ms,
		                              round(extract(epoch FROM EXCLUDED.finished_at - a.started_at) * 1000))
	)
	SELECT id, status FROM freed`

// attemptsOfJob is the number of attempts the job of run r allows
// (max_retries + 1), for completeSQL: a scalar subquery that a CASE
// evaluates only for a failed outcome, so a success reads nothing of
// jobs (it was a probe of jobs for every run, in a join).
const attemptsOfJob = `(SELECT j.max_retries + 1 FROM jobs j WHERE j.id = r.job_id)`

// limitReleaseCTE, in completeSQL after freed, releases the runs held for
// the keys of the runs it finished, one for each (oldest first), so a
// slot a completion frees is taken at once, not at the leader's next
// release. While no run is held for its limit anywhere (nearly always),
// one look at job_runs_limit_held_idx says so and no key is looked up;
// otherwise it reads each key's row (its held hint, to skip the keys with
// nothing held: nearly all) and writes none: the claim that takes a
// released run counts the key's runs in flight if its bound says full
// (limitClaimCTEs), and a released run the key has no room for after all
// is simply held again. SKIP LOCKED: a held run another statement is
// releasing or moving is not waited for. The runs released are the ones
// w chose and locked, so they are still as w saw them: the update finds
// each by its key alone (conditions that match job_runs_held_idx's
// predicate let a generic plan read that whole index for each run
// instead; see fenceEach).
const limitReleaseCTE = `released AS (
		UPDATE job_runs h SET held = false, limit_held = false
		  FROM (SELECT w.id, w.scheduled_at
		          FROM (SELECT limit_key, count(*)::integer AS n FROM freed
		                 WHERE limit_key IS NOT NULL
		                   AND EXISTS (SELECT 1 FROM job_runs a WHERE a.limit_held AND a.held AND a.status = 'pending')
		                 GROUP BY limit_key) f
		          JOIN limits l ON l.key = f.limit_key AND l.held > 0,
		               LATERAL (SELECT w.id, w.scheduled_at FROM job_runs w
		                         WHERE w.limit_key = f.limit_key AND w.limit_held AND w.held AND w.status = 'pending'
		                         ORDER BY w.available_at, w.id
		                         LIMIT f.n
		                           FOR UPDATE SKIP LOCKED) w) x
		 WHERE h.id = x.id AND h.scheduled_at = x.scheduled_at
	)`

// completeSQLBeforeLimits is completeSQL without the release of held
// runs, for a database not yet migrated to 022 (limits), as
// claimSQLBeforeLimits is for the claim.
var completeSQLBeforeLimits = strings.NewReplacer(
	"RETURNING r.id, r.status, r.limit_key", "RETURNING r.id, r.status",
	"), "+limitReleaseCTE+", recorded AS (", "), recorded AS (",
).Replace(completeSQL)

// Complete records a batch of outcomes in one round trip: success →
// succeeded; failure → pending after RetryDelay, or dead when the run has
// had max_retries+1 attempts. It returns, per outcome, the run's new status
// or ErrLeaseLost for a write the fence rejected.
//
// Error and Body are made storable (valid UTF-8, no NUL bytes) and cut to
// 2 KiB and MaxBodyBytes. An outcome repeated within a batch (same run) is
// ErrLeaseLost after the first: the attempt can be completed only once.
func (db *DB) Complete(ctx context.Context, outs []Outcome) ([]CompleteResult, error) {
	res := make([]CompleteResult, len(outs))
	if len(outs) == 0 {
		return res, nil
	}
	n := len(outs)
	var (
		ids      = make([]int64, 0, n)
		workers  = make([]string, 0, n)
		attempts = make([]int32, 0, n)
		success  = make([]bool, 0, n)
		codes    = make([]*int32, 0, n)
		errs     = make([]*string, 0, n)
		bodies   = make([]*string, 0, n)
		retry    = make([]int64, 0, n)
		duration = make([]*int64, 0, n)
		recorded = make([]bool, 0, n)
		sched    = make([]time.Time, 0, n)
	)
	// The nullable values point into these arrays: an allocation per
	// column rather than per outcome.
	var (
		codeVals = make([]int32, n)
		textVals = make([]string, 2*n)
		msVals   = make([]int64, n)
	)
	index := make(map[int64]int, n) // run id -> position in outs
	for i, o := range outs {
		if _, dup := index[o.RunID]; dup {
			res[i].Err = fmt.Errorf("complete run %d attempt %d: %w", o.RunID, o.Attempt, ErrLeaseLost)
			continue
		}
		index[o.RunID] = i
		ids = append(ids, o.RunID)
		workers = append(workers, o.Worker)
		attempts = append(attempts, int32(o.Attempt))
		success = append(success, o.Success)
		codes = append(codes, nonZeroIn(&codeVals[i], int32(o.StatusCode)))
		errs = append(errs, nonEmptyIn(&textVals[2*i], storable(o.Error, maxErrorBytes)))
		bodies = append(bodies, nonEmptyIn(&textVals[2*i+1], storable(o.Body, MaxBodyBytes)))
		retry = append(retry, max(0, micros(o.RetryDelay)))
		var ms *int64
		if !o.StartedAt.IsZero() && !o.FinishedAt.IsZero() {
			ms = &msVals[i]
			*ms = o.FinishedAt.Sub(o.StartedAt).Milliseconds()
		}
		duration = append(duration, ms)
		recorded = append(recorded, o.StartRecorded)
		sched = append(sched, o.ScheduledAt)
	}
	rows, err := db.Pool.QueryPlannedOnce(ctx, completeSQL, ids, workers, attempts, success, codes, errs, bodies,
		retry, duration, recorded, sched)
	if beforeLimits(err) {
		rows, err = db.Pool.QueryPlannedOnce(ctx, completeSQLBeforeLimits, ids, workers, attempts, success, codes,
			errs, bodies, retry, duration, recorded, sched)
	}
	if err != nil {
		return nil, mapErr(err, "complete runs")
	}
	// The statement returns the runs it finished; an outcome it does not
	// return was refused by the fence.
	var (
		id     int64
		status statusScan
		done   = make([]bool, len(outs))
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &status}, func() error {
		i := index[id]
		done[i] = true
		res[i].Status = status.status
		return nil
	})
	if err != nil {
		return nil, mapErr(err, "complete runs")
	}
	for id, i := range index {
		if !done[i] {
			res[i].Err = fmt.Errorf("complete run %d attempt %d: %w", id, outs[i].Attempt, ErrLeaseLost)
		}
	}
	return res, nil
}

// statusScan reads a run's status without an allocation for the
// statuses a run can have (pgtype.BytesScanner).
type statusScan struct {
	status chronos.RunStatus
}

// runStatuses are the values job_runs.status may hold (its CHECK).
var runStatuses = []chronos.RunStatus{chronos.StatusPending, chronos.StatusLeased, chronos.StatusRunning,
	chronos.StatusSucceeded, chronos.StatusDead}

// ScanBytes implements pgtype.BytesScanner.
func (s *statusScan) ScanBytes(src []byte) error {
	*s = statusScan{}
	for _, st := range runStatuses {
		if string(src) == string(st) {
			s.status = st
			return nil
		}
	}
	s.status = chronos.RunStatus(src) // a copy: src is the driver's
	return nil
}

// storable makes s valid UTF-8 without NUL bytes (Postgres text accepts
// neither) and at most limit bytes, cut at a rune boundary.
func storable(s string, limit int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = strings.ReplaceAll(s, "\x00", "")
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// nonZero is v, or nil (NULL) when v is 0.
func nonZero(v int32) *int32 { return nonZeroIn(new(int32), v) }

// nonEmpty is s, or nil (NULL) when s is "".
func nonEmpty(s string) *string { return nonEmptyIn(new(string), s) }

// nonZeroIn is nonZero storing v in *p, so that a batch's values can
// share one array.
func nonZeroIn(p *int32, v int32) *int32 {
	if v == 0 {
		return nil
	}
	*p = v
	return p
}

// nonEmptyIn is nonEmpty storing s in *p (see nonZeroIn).
func nonEmptyIn(p *string, s string) *string {
	if s == "" {
		return nil
	}
	*p = s
	return p
}
