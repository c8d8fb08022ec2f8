package sql

// SKELETON: signatures fixed by the lead; bodies to be implemented.

import (
	"context"
	"errors"
	"time"

	"github.com/chronoshq/chronos"
)

var errTODO = errors.New("not implemented")

// CreateJob stores a new, validated job, computing next_run_at, and fills
// j's id, next_run_at and timestamps. Constraint violations come back as
// EINVALID.
func (db *DB) CreateJob(ctx context.Context, j *chronos.Job) error { return errTODO }

// Job returns one job, or ENOTFOUND.
func (db *DB) Job(ctx context.Context, id int64) (*chronos.Job, error) { return nil, errTODO }

// JobFilter selects a page of jobs.
type JobFilter struct {
	Enabled *bool  // nil: all
	Cursor  string // opaque, from a previous page; "" starts at the beginning
	Limit   int    // default 50, capped at 500
}

// Jobs returns a page of jobs in id order and the cursor of the next page
// ("" on the last). A malformed cursor is EINVALID.
func (db *DB) Jobs(ctx context.Context, f JobFilter) ([]*chronos.Job, string, error) {
	return nil, "", errTODO
}

// UpdateJob applies a partial update in one transaction (absent fields
// untouched, validation of the result, next_run_at recomputed when the
// schedule changed) and returns the job as stored. ENOTFOUND, EINVALID.
func (db *DB) UpdateJob(ctx context.Context, id int64, u *chronos.JobUpdate) (*chronos.Job, error) {
	return nil, errTODO
}

// DeleteJob deletes a job and its runs. ENOTFOUND.
func (db *DB) DeleteJob(ctx context.Context, id int64) error { return errTODO }

// Trigger enqueues a manual run of the job, available now. ENOTFOUND.
func (db *DB) Trigger(ctx context.Context, jobID int64) (*chronos.Run, error) { return nil, errTODO }

// MaterializeResult says what one Materialize call did.
type MaterializeResult struct {
	Jobs    int            // jobs examined
	Created int            // runs inserted
	Skipped int            // occurrences skipped by overlap policy
	Runs    []*chronos.Run // the runs inserted
}

// Materialize turns the due occurrences of up to batch jobs with
// next_run_at <= now+lookahead into pending runs (available_at = the
// scheduled instant), idempotently (UNIQUE (job_id, scheduled_at)),
// honouring overlap, with one catch-up run for a gap, and advances
// next_run_at. Call it again while it returns a full batch.
func (db *DB) Materialize(ctx context.Context, now time.Time, lookahead time.Duration, batch int) (MaterializeResult, error) {
	return MaterializeResult{}, errTODO
}

// Claimed is a run handed to a worker, with the job it belongs to.
type Claimed struct {
	Run *chronos.Run
	Job *chronos.Job
}

// Lease identifies the worker's hold on one attempt of a run; it fences
// every write the worker makes.
type Lease struct {
	RunID   int64
	Worker  string
	Attempt int
}

// Lease returns the lease a claimed run was handed out under.
func (c Claimed) Lease() Lease {
	w := ""
	if c.Run.LeasedBy != nil {
		w = *c.Run.LeasedBy
	}
	return Lease{RunID: c.Run.ID, Worker: w, Attempt: c.Run.AttemptCount}
}

// Claim leases up to n pending runs with available_at <= now() to worker,
// in one statement (FOR UPDATE SKIP LOCKED), counting the attempt.
func (db *DB) Claim(ctx context.Context, worker string, n int, lease time.Duration) ([]Claimed, error) {
	return nil, errTODO
}

// Start marks a leased run running and records the attempt's start.
// ErrLeaseLost when the lease is gone.
func (db *DB) Start(ctx context.Context, l Lease) error { return errTODO }

// Renew extends the lease to now()+d. ErrLeaseLost when the lease is gone.
func (db *DB) Renew(ctx context.Context, l Lease, d time.Duration) error { return errTODO }

// Outcome is the result of one attempt.
type Outcome struct {
	Lease
	Success    bool
	StatusCode int    // 0 when no response
	Error      string // "" on success
	Body       string // truncated response body
	StartedAt  time.Time
	FinishedAt time.Time
	RetryDelay time.Duration // on failure with attempts left: wait this long
}

// Complete records a batch of outcomes in one round trip: success →
// succeeded; failure → pending after RetryDelay, or dead when the run has
// had max_retries+1 attempts. It returns, per outcome, the run's new status
// or ErrLeaseLost for a write the fence rejected.
func (db *DB) Complete(ctx context.Context, outs []Outcome) ([]CompleteResult, error) {
	return nil, errTODO
}

// CompleteResult is the fate of one Outcome.
type CompleteResult struct {
	Status chronos.RunStatus
	Err    error // ErrLeaseLost, or nil
}

// Release hands a leased or running run back to pending without counting
// the attempt (graceful shutdown). ErrLeaseLost when the lease is gone.
func (db *DB) Release(ctx context.Context, l Lease) error { return errTODO }

// ReclaimResult says what one Reclaim call did.
type ReclaimResult struct {
	Reclaimed int // back to pending
	Dead      int // attempts exhausted, dead with "lease expired"
}

// Reclaim takes back up to limit leased/running runs whose leased_until has
// passed (re-checked at update time). The lost attempt counts: a run with
// attempts left is pending again, one without is dead with
// chronos.LeaseExpiredError.
func (db *DB) Reclaim(ctx context.Context, limit int) (ReclaimResult, error) {
	return ReclaimResult{}, errTODO
}

// HasActiveRun reports whether the job has a pending, leased or running run.
func (db *DB) HasActiveRun(ctx context.Context, jobID int64) (bool, error) { return false, errTODO }

// RunFilter selects a page of a job's runs.
type RunFilter struct {
	Status chronos.RunStatus // "": all
	Cursor string
	Limit  int // default 50, capped at 500
}

// Runs returns a page of the job's runs, newest first, and the next
// cursor. ENOTFOUND for an unknown job, EINVALID for a bad cursor.
func (db *DB) Runs(ctx context.Context, jobID int64, f RunFilter) ([]*chronos.Run, string, error) {
	return nil, "", errTODO
}

// Run returns a run with its attempts. ENOTFOUND.
func (db *DB) Run(ctx context.Context, id int64) (*chronos.Run, error) { return nil, errTODO }

// Redrive gives a dead run a fresh set of attempts: a new pending run
// (trigger redrive) of the same job and scheduled instant. ECONFLICT when
// the run is not dead, ENOTFOUND when it does not exist.
func (db *DB) Redrive(ctx context.Context, runID int64) (*chronos.Run, error) { return nil, errTODO }

// Prune deletes up to batch terminal runs (and their attempts) that
// finished before `before`; it returns how many it deleted.
func (db *DB) Prune(ctx context.Context, before time.Time, batch int) (int, error) { return 0, errTODO }

// NextAvailable returns the earliest available_at of a pending run, or nil.
func (db *DB) NextAvailable(ctx context.Context) (*time.Time, error) { return nil, errTODO }
