package sql

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/jackc/pgx/v5"
)

// Claimed is a run handed to a worker, with the job it belongs to: only
// the fields delivering it needs are set (see claimRunColumns and
// claimPickedJobColumns); read the rest with Run or Job.
type Claimed struct {
	Run *chronos.Run
	Job *chronos.Job
	// Wait is how long until the run's available_at, by the database's
	// clock at the end of the claim: zero unless it was claimed ahead
	// (see ClaimAhead).
	Wait time.Duration
	// Due is Wait from when the claim's answer arrived, by this process's
	// clock: when to send a run claimed ahead (zero otherwise). Such a run
	// must be marked started with StartAhead before it is sent.
	Due time.Time
}

// Lease identifies the worker's hold on one attempt of a run; it fences
// every write the worker makes.
type Lease struct {
	RunID   int64
	Worker  string
	Attempt int
	// ScheduledAt is the run's partition key: with it a write of the run
	// looks in one partition of job_runs, not in every one.
	ScheduledAt time.Time
}

// Lease returns the lease a claimed run was handed out under.
func (c Claimed) Lease() Lease {
	w := ""
	if c.Run.LeasedBy != nil {
		w = *c.Run.LeasedBy
	}
	return Lease{RunID: c.Run.ID, Worker: w, Attempt: c.Run.AttemptCount, ScheduledAt: c.Run.ScheduledAt}
}

// fence is the WHERE clause of every worker write: $1 run id, $2 worker,
// $3 attempt, $4 the run's scheduled_at (see fenceArgs). A reclaimed run
// has another (or no) leased_by, or a higher attempt_count, so a stale
// worker's write matches no row. scheduled_at, which never changes, is
// the partition key: with it the write is pruned to the run's partition
// (without, it probed every partition's primary key, a dozen at a week's
// retention).
const fence = "id = $1 AND leased_by = $2 AND attempt_count = $3 AND scheduled_at = $4 AND status IN ('leased', 'running')"

// fenceEach is fence for a statement that writes many runs: the run r
// against the lease o (o.run_id, o.worker, o.attempt, o.scheduled_at), a
// row of the arrays it unnests.
//
// It leaves out fence's status condition, which leased_by implies: a run
// has a leased_by exactly while it is leased or running (the CHECK
// job_runs_lease_check, migration 001). Stated, it let the planner read
// the batch's runs from job_runs_leases_idx, whose predicate it matches:
// on statistics that count a handful of runs in flight, a generic plan
// read the whole index of every partition for each batch (every run in
// flight, and every entry a finished run left there since the last
// vacuum: a herd's hundred thousand by its end) instead of probing the
// primary key for each run (TestDeliveryPathWalksIndexesOnStaleStatistics).
const fenceEach = "r.id = o.run_id AND r.leased_by = o.worker AND r.attempt_count = o.attempt AND r.scheduled_at = o.scheduled_at"

// fenceArgs are fence's arguments for l, followed by more.
func fenceArgs(l Lease, more ...any) []any {
	return append([]any{l.RunID, l.Worker, l.Attempt, l.ScheduledAt}, more...)
}

// fenced is the outcome of a write fenced on l's lease that touched n
// rows: err mapped with what, or ErrLeaseLost when it touched none (the
// lease is gone), said by lost, a format given l's run and attempt.
func fenced(l Lease, n int64, err error, what, lost string) error {
	if err != nil {
		return mapErr(err, what)
	}
	if n == 0 {
		return fmt.Errorf(lost+": %w", l.RunID, l.Attempt, ErrLeaseLost)
	}
	return nil
}

// claimSQL is one statement: pick, lease and count, then join the jobs.
// SKIP LOCKED lets concurrent claimers take disjoint runs without waiting.
// The result is not a NOTIFY: leased rows are not news to anyone.
//
// Two kinds of pending run are held back:
//   - a run of a job whose overlap policy allows one active run (skip,
//     queue_one) while another run of that job is leased or running. The
//     job's row in job_run_locks says so; a claim takes it with ON CONFLICT
//     DO NOTHING, which consults the unique index, not this statement's
//     snapshot, so of two instances claiming runs of one job at once only
//     one wins, and one claim takes at most one run of such a job. Most
//     such runs are not even looked at: a run waiting behind the lock or
//     behind an earlier run of its job is held (job_runs.held, see
//     runlock.go) and so not in job_runs_claimable_idx, which the claim
//     walks; only the head of each such job's queue is. Triggers release
//     the lock and promote the next held run whatever statement ends the
//     active one.
//   - a scheduled run of an enabled job whose next_run_at (in its
//     schedule row, job_schedules) is not after now: the materializer has
//     not caught up with the job (no leader for a while), and when it does
//     it may fold that run into a catch-up. A paused job is not
//     materialized, and a queue_one job's run waits behind the active one
//     by design, so their runs are never held this way. A cron job whose
//     window has ended has no next_run_at: its runs are held while no
//     materializer pass vouches for the present (chronos_materializer,
//     migration 036; see foldEnded), which is when every other cron job
//     is behind too.
//   - a catch-up run of a misfire "all" gap scheduled after the job's
//     catch_up_at: missed occurrences run one after another, in order
//     (see startCatchUps).
//
// The job's conditions are scalar subqueries, not a join, on purpose: with
// job_runs the only relation in the FROM, the plan is always a walk of
// job_runs_claimable_idx in claim order that stops after $2 rows. As a
// join, the planner's guess at the filters' selectivity could make a seq
// scan and sort of every due run look cheaper (and it did: 40 ms per claim
// with 40,000 runs due, against under 1 ms for the walk).
//
// Runs over their key's limit are held, not leased (limitClaimCTEs).
// A run whose host holds it back (a deferral, an open breaker) waits too:
// see hostClearSQL (hosts.go).
//
// And one kind is refused for good: a scheduled run, never attempted, of
// a job with a starting deadline, whose available_at is further in the
// past than that deadline. The leader marks it missed (expiredSQL).
var claimSQL = claimSQLWith(claimableOfJob(claimableBehind), limitClaimCTEs, limitTakenCTE)

// claimSQL035 is claimSQL for a database before migration 036 (no
// chronos_materializer yet): a finished cron job's runs are not held.
var claimSQL035 = claimSQLWith(claimableOfJob(claimableBehind035), limitClaimCTEs, limitTakenCTE)

// claimSQLWith is claimSQL with the job's condition claimable (on the run
// r and its job j, see claimableOfJob), the limit check limits (the CTEs
// between picked and locked) and the key rows' write taken (after
// locked).
//
// Each run's job is read once, by its key, in a LATERAL subquery that
// OFFSET 0 keeps from being pulled up into a join: it yields the job's
// condition on the claim, its overlap and what delivering the run needs,
// which the leased runs carry out. The plan is a walk of
// job_runs_claimable_idx in claim order with one probe of jobs a run
// walked. The job used to be read three times a run (its overlap, its
// condition, and the columns, by a join after the update), and as a join
// the generic plan, guessing a tenth of the due runs for LIMIT $2, merged
// the leased runs with jobs_pkey from its first entry: halfway through a
// herd of 100,000 jobs, 55,000 rows of jobs read for 40 runs, in every
// claim (TestClaimWalksTheClaimableIndex).
func claimSQLWith(claimable, limits, taken string) string {
	return `
	WITH picked AS (
		SELECT r.id, r.scheduled_at, r.job_id, r.available_at, r.limit_key, j.exclusive, ` + qualified("j", claimPickedJobColumns) + `
		  FROM job_runs r CROSS JOIN LATERAL (
		       SELECT j.overlap <> 'allow' AS exclusive, ` + claimable + ` AS claimable, ` + qualified("j", claimPickedJobColumns) + `
		         FROM jobs j WHERE j.id = r.job_id OFFSET 0) j
		 WHERE r.status = 'pending' AND NOT r.held
		   AND r.available_at <= now() + $4::bigint * interval '1 microsecond'
		   AND j.claimable
		   AND ` + hostClearSQL + `
		 ORDER BY r.available_at, r.id
		 LIMIT $2
		   FOR UPDATE OF r SKIP LOCKED
	), ` + limits + `, locked AS (
		INSERT INTO job_run_locks (job_id, run_id)
		SELECT job_id, id FROM (
			SELECT DISTINCT ON (job_id) job_id, id FROM picked
			 WHERE exclusive AND id NOT IN (SELECT id FROM over_limit)
			 ORDER BY job_id, available_at, id) first
		 ORDER BY job_id
		ON CONFLICT (job_id) DO NOTHING
		RETURNING run_id
	), ` + taken + `, leased AS (
		UPDATE job_runs r
		   SET status = 'leased', leased_by = $1,
		       leased_until = now() + $3::bigint * interval '1 microsecond',
		       attempt_count = r.attempt_count + 1
		  FROM picked
		 WHERE r.id = picked.id AND r.scheduled_at = picked.scheduled_at
		   AND (NOT picked.exclusive OR picked.id IN (SELECT run_id FROM locked))
		   AND picked.id NOT IN (SELECT id FROM over_limit)
		RETURNING ` + qualified("r", claimRunColumns) + `, ` + qualified("picked", claimPickedJobColumns) + `
	)
	SELECT ` + qualified("l", claimRunColumns) + `, l.job_id, ` + qualified("l", claimPickedJobColumns) + `,
	       greatest(0, extract(epoch FROM l.available_at - clock_timestamp()) * 1000000)::bigint
	  FROM leased l
	 ORDER BY l.available_at, l.id`
}

// The slim claim (issue 21): a claim returns what delivering the run
// needs, and nothing else: the request (target, method, headers, payload,
// timeout), its signature (secrets), the retry delay (backoff), the
// headers that identify the run, and the lease. Not the job's name,
// schedule, policies, labels or description, nor the run's history.
//
// The job's columns ride with the run from picked to the answer; its id
// is the run's job_id.
const (
	claimRunColumns       = "id, job_id, scheduled_at, trigger, catch_up, attempt_count, available_at, leased_until, created_at"
	claimPickedJobColumns = "target_url, method, headers, payload, timeout_seconds, backoff, backoff_base_seconds, " +
		"backoff_max_seconds, signing_secrets"
)

// scanClaimed reads a row of the claim: claimRunColumns, the job's id and
// claimPickedJobColumns, and the wait in microseconds. The run is leased
// to *worker (one string for the whole claim: nothing writes through a
// run's LeasedBy).
func scanClaimed(row pgx.CollectableRow, worker *string) (Claimed, error) {
	var (
		r       = chronos.Run{Status: chronos.StatusLeased}
		j       chronos.Job
		secrets []storedSecret
		wait    int64
	)
	// The payload is scanned into j.Payload directly: pgx copies a json
	// column into a []byte of its own.
	payload := (*[]byte)(&j.Payload)
	if err := row.Scan(&r.ID, &r.JobID, &r.ScheduledAt, &r.Trigger, &r.CatchUp, &r.AttemptCount, &r.AvailableAt,
		&r.LeasedUntil, &r.CreatedAt,
		&j.ID, &j.TargetURL, &j.Method, headersScan{&j.Headers}, payload, &j.TimeoutSeconds, &j.Backoff,
		&j.BackoffBaseSeconds, &j.BackoffMaxSeconds, secretsScan{&secrets}, &wait); err != nil {
		return Claimed{}, err
	}
	r.LeasedBy = worker
	if j.Headers == nil {
		j.Headers = map[string]string{}
	}
	j.SigningSecrets = fromStored(secrets)
	return Claimed{Run: normRun(&r), Job: &j, Wait: time.Duration(wait) * time.Microsecond}, nil
}

// headersScan and secretsScan read a claimed job's headers and signing
// secrets (jsonb) the way pgx would, with encoding/json, except that the
// column's default, an empty object or array, is not decoded at all: it
// leaves the destination nil, which scanClaimed reads as empty, and is
// what nearly every job holds. They take the bytes pgx received
// (pgtype.BytesScanner), so nothing is copied either.
type (
	headersScan struct{ dst *map[string]string }
	secretsScan struct{ dst *[]storedSecret }
)

// ScanBytes implements pgtype.BytesScanner.
func (s headersScan) ScanBytes(src []byte) error { return scanJSON(src, s.dst, "{}") }

// ScanBytes implements pgtype.BytesScanner.
func (s secretsScan) ScanBytes(src []byte) error { return scanJSON(src, s.dst, "[]") }

// scanJSON decodes a json(b) value src into *dst, which it zeroes first
// as pgx does; NULL and the value empty leave it zero.
func scanJSON[T any](src []byte, dst *T, empty string) error {
	var zero T
	*dst = zero
	if src == nil || string(src) == empty {
		return nil
	}
	return json.Unmarshal(src, dst)
}

// claimableSQL is the condition on a pending run r that its job puts on
// claiming it (see claimSQL), as a scalar subquery: false or null (the job
// is gone) holds the run back.
var claimableSQL = `(SELECT ` + claimableOfJob(claimableBehind) + ` FROM jobs j WHERE j.id = r.job_id)`

// claimableBehind is the condition on the job's schedule row s under
// which its scheduled runs wait for the materializer; claimableBehind035
// is the same before migration 036.
const (
	claimableBehind    = `(s.next_run_at <= now() OR (s.next_run_at IS NULL AND s.cron AND ` + unvouchedSQL + `))`
	claimableBehind035 = `s.next_run_at <= now()`
)

// claimableOfJob is the condition the job j puts on claiming its pending
// run r, with behind (claimableBehind) for when its scheduled runs wait
// for the materializer.
func claimableOfJob(behind string) string {
	return `((j.overlap = 'allow'
	                OR NOT EXISTS (SELECT 1 FROM job_run_locks l WHERE l.job_id = j.id))
	           AND NOT coalesce((SELECT (r.trigger = 'schedule' AND j.overlap <> 'queue_one' AND j.enabled
	                                     AND ` + behind + `)
	                                    OR (r.trigger = 'schedule' AND r.catch_up AND r.scheduled_at > s.catch_up_at)
	                               FROM job_schedules s WHERE s.job_id = r.job_id), false)
	           AND NOT ` + pastDeadline + `)`
}

// unvouchedSQL is true when the last materializer pass no longer vouches
// for the present (its valid_until is past): no leader has materialized
// for a lookahead. Null, never written, says nothing (see migration 036).
const unvouchedSQL = `(SELECT m.valid_until < now() FROM chronos_materializer m)`

// pastDeadline is true for a run r of job j that may no longer start: see
// claimSQL.
const pastDeadline = `coalesce(r.trigger = 'schedule' AND r.attempt_count = 0
	AND r.available_at + j.starting_deadline_seconds * interval '1 second' < now(), false)`

// Claim leases up to n pending runs with available_at <= now() to worker,
// in one statement (FOR UPDATE SKIP LOCKED), counting the attempt.
func (db *DB) Claim(ctx context.Context, worker string, n int, lease time.Duration) ([]Claimed, error) {
	return db.ClaimAhead(ctx, worker, n, lease, 0)
}

// ClaimAhead is Claim that also takes runs due within ahead of now, in
// available_at order after the due ones. Each Claimed's Wait says how
// long, by the database's clock at the end of the claim, until the run's
// available_at: a worker that waits that long from when the claim's answer
// arrived sends it no sooner, and no later than the commit and the answer
// took. Claiming a moment ahead takes the claim's round trip and commit
// out of the delay between a run's instant and its delivery.
func (db *DB) ClaimAhead(ctx context.Context, worker string, n int, lease, ahead time.Duration) ([]Claimed, error) {
	if n <= 0 {
		return nil, nil
	}
	if lease <= 0 {
		return nil, fmt.Errorf("claim runs: lease duration %v is not positive", lease)
	}
	claim := func(q string) ([]Claimed, error) {
		rows, err := db.Pool.QueryPlannedOnce(ctx, db.hostsSQL(ctx, q), worker, n, micros(lease), max(0, micros(ahead)))
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Claimed, error) { return scanClaimed(row, &worker) })
	}
	counted := db.LimitsCounted(ctx)
	q := claimSQL
	switch {
	case !counted:
		q = claimSQL028
	case !db.Vouches(ctx):
		q = claimSQL035
	}
	out, err := claim(q)
	if !counted && pgCode(err) == "55000" && db.LimitsCounted(ctx) {
		// Migration 034 landed during the claim: its guard refused the
		// claim's write of a key's bound, and nothing was leased.
		out, err = claim(claimSQL)
	}
	if beforeLimits(err) {
		out, err = claim(claimSQLBeforeLimits)
	}
	if err != nil {
		return nil, mapErr(err, "claim runs")
	}
	arrived := time.Now()
	for i := range out {
		if out[i].Wait > 0 {
			out[i].Due = arrived.Add(out[i].Wait)
		}
	}
	return out, nil
}

// Renew extends the lease to now()+d. ErrLeaseLost when the lease is gone.
//
// A lease past its leased_until that the reaper has not yet taken is still
// the worker's: renewing it is allowed, the fence is on identity, not time.
func (db *DB) Renew(ctx context.Context, l Lease, d time.Duration) error {
	tag, err := db.Pool.ExecPlannedOnce(ctx, `
		UPDATE job_runs SET leased_until = now() + $5::bigint * interval '1 microsecond'
		 WHERE `+fence, fenceArgs(l, micros(d))...)
	return fenced(l, tag.RowsAffected(), err, "renew lease", "renew lease of run %d attempt %d")
}

// undoAttemptSet is the SET list that hands a leased or running run back
// to pending as if its attempt had never been made (Release, Defer,
// Postpone): attempt_count back down, the lease cleared, started_at
// cleared again for a first attempt.
const undoAttemptSet = `status = 'pending', attempt_count = attempt_count - 1,
			       leased_by = NULL, leased_until = NULL,
			       started_at = CASE WHEN attempt_count = 1 THEN NULL ELSE started_at END`

// handBackSQL is the statement that hands the run of a lease back to
// pending with its attempt undone (Release, Defer, Postpone): fenced on
// the lease ($1 to $4, see fence), undoAttemptSet and then set (more SET
// items, each with a leading comma, or none), on the rows that also meet
// where (more conditions, each with a leading AND, or none); the
// attempt's run_attempts row is deleted in the same statement. It selects
// sel from freed (the run's id and available_at, or none: the lease is
// gone).
func handBackSQL(set, where, sel string) string {
	return `
		WITH freed AS (
			UPDATE job_runs
			   SET ` + undoAttemptSet + set + `
			 WHERE ` + fence + where + `
			RETURNING id, available_at
		), forgotten AS (
			DELETE FROM run_attempts a USING freed
			 WHERE a.run_id = freed.id AND a.attempt = $3
		)
		SELECT ` + sel + ` FROM freed`
}

// Release hands a leased or running run back to pending without counting
// the attempt (graceful shutdown). ErrLeaseLost when the lease is gone.
//
// The attempt is undone entirely: attempt_count goes back down and the
// attempt's run_attempts row is deleted, so a run released at shutdown
// still gets exactly max_retries+1 counted attempts, each with its row.
// The run keeps its available_at, so it stays ahead of a run of its job
// that waits behind it (queue_one). Only a request that never reached the
// wire may be released: one that was sent is a counted attempt.
func (db *DB) Release(ctx context.Context, l Lease) error {
	var n int64
	err := db.Pool.QueryRow(ctx, handBackSQL("", "", "count(*)"), fenceArgs(l)...).Scan(&n)
	return fenced(l, n, err, "release run", "release run %d attempt %d")
}

// releaseManySQL is Release for a batch of leases in one statement over
// unnest()ed arrays ($1 run ids, $2 workers, $3 attempts, $4 scheduled_at),
// each fenced on its own lease (fenceEach). It selects the ids of the runs
// it handed back.
var releaseManySQL = `
	WITH o AS (
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::int[], $4::timestamptz[])
		       AS o(run_id, worker, attempt, scheduled_at)
	), freed AS (
		UPDATE job_runs r
		   SET ` + undoAttemptSet + `
		  FROM o
		 WHERE ` + fenceEach + `
		RETURNING r.id, o.attempt
	), forgotten AS (
		DELETE FROM run_attempts a USING freed
		 WHERE a.run_id = freed.id AND a.attempt = freed.attempt
	)
	SELECT id FROM freed`

// ReleaseMany is Release for many leases in one round trip and one
// statement: the runs a stopping instance had claimed but not yet sent
// (its prefetch queue holds up to five a worker), which one at a time
// took a connection each from a pool the completions of the calls in
// flight need meanwhile, and a NOTIFY each. It returns, per lease, nil or
// ErrLeaseLost (the lease is gone: the run is another's, or done).
func (db *DB) ReleaseMany(ctx context.Context, leases []Lease) ([]error, error) {
	res := make([]error, len(leases))
	if len(leases) == 0 {
		return res, nil
	}
	var (
		ids      = make([]int64, len(leases))
		workers  = make([]string, len(leases))
		attempts = make([]int32, len(leases))
		sched    = make([]time.Time, len(leases))
	)
	for i, l := range leases {
		ids[i], workers[i], attempts[i], sched[i] = l.RunID, l.Worker, int32(l.Attempt), l.ScheduledAt
	}
	rows, err := db.Pool.QueryPlannedOnce(ctx, releaseManySQL, ids, workers, attempts, sched)
	freed, err := collect(rows, err, "release runs", scanOne[int64])
	if err != nil {
		return nil, err
	}
	done := make(map[int64]bool, len(freed))
	for _, id := range freed {
		done[id] = true
	}
	for i, l := range leases {
		if !done[l.RunID] {
			res[i] = fmt.Errorf("release run %d attempt %d: %w", l.RunID, l.Attempt, ErrLeaseLost)
		}
		// A run named twice is handed back once: its second lease is
		// then as stale as any other.
		done[l.RunID] = false
	}
	return res, nil
}
