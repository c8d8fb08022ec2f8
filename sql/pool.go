package sql

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Pool is a pgx pool whose writes may commit with synchronous_commit off
// (Options.AsyncCommit). The setting is made per transaction, never per
// session: a transaction pooler forwards no startup parameters, and a
// session SET would stay behind on a server session that the pooler then
// hands to another client, whose acknowledged writes would silently stop
// being durable.
//
//   - Begin and BeginTx open the transaction with "BEGIN; SET LOCAL
//     synchronous_commit TO off; SET LOCAL jit TO off" in one
//     simple-protocol round trip.
//   - Exec, Query and QueryRow send set_config('synchronous_commit',
//     'off', true) and set_config('jit', 'off', true) and the statement
//     in one batch: one round trip, one implicit transaction, so the
//     settings cover exactly that statement.
//
// JIT goes with them (see asyncCommitSQL) because this is the reactors'
// pool.
//
// Everything else is pgxpool's. Without AsyncCommit every method is
// pgxpool's own.
type Pool struct {
	*pgxpool.Pool
	asyncCommit bool
}

// asyncCommitSQL sets synchronous_commit for the current transaction
// only, and turns JIT off for it: the reactors' pool is the one with
// AsyncCommit, and none of their statements runs long enough for JIT's
// compiling to pay (see noJITSetting), while the estimates of some grow
// with the tables past jit_above_cost (NextAvailable's once cost 750 ms
// of compiling a call).
const asyncCommitSQL = "SELECT " + asyncCommitSetting + ", " + noJITSetting

// async tells whether a call with args takes the asynchronous-commit
// path: a query option as the first argument (a QueryExecMode, result
// formats, a rewriter) is not something a batch accepts, so those go
// through as they are, committing synchronously.
func (p *Pool) async(args []any) bool {
	if !p.asyncCommit {
		return false
	}
	if len(args) > 0 {
		switch args[0].(type) {
		case pgx.QueryExecMode, pgx.QueryResultFormats, pgx.QueryResultFormatsByOID, pgx.QueryRewriter:
			return false
		}
	}
	return true
}

// Exec is pgxpool's Exec, committing asynchronously with AsyncCommit.
func (p *Pool) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if !p.async(args) {
		return p.Pool.Exec(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(asyncCommitSQL)
	b.Queue(sql, args...)
	br := p.Pool.SendBatch(ctx, b)
	_, err := br.Exec()
	var tag pgconn.CommandTag
	if err == nil {
		tag, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

// Query is pgxpool's Query, committing asynchronously with AsyncCommit.
func (p *Pool) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if !p.async(args) {
		return p.Pool.Query(ctx, sql, args...)
	}
	return p.queryAfter(ctx, []string{asyncCommitSQL}, sql, args...)
}

// The delivery path's statements run with settings made for their own
// implicit transaction only (set_config's is_local), sent in the same
// batch as the statement, in one statement of their own: one round trip.
const (
	// noBitmapSetting: see QueryIndexWalk.
	noBitmapSetting = "set_config('enable_bitmapscan', 'off', true)"
	// noJITSetting: JIT compilation is for statements that run for
	// seconds. A plan whose estimated cost crossed jit_above_cost, as a
	// generic plan of the claim does once job_runs holds a million pending
	// runs, was compiled on every call: 1.3 s of LLVM for a claim that
	// runs in 1.5 ms.
	noJITSetting = "set_config('jit', 'off', true)"
	// genericPlanSetting, noSeqScanSetting and the join settings: see
	// QueryPlannedOnce.
	genericPlanSetting = "set_config('plan_cache_mode', 'force_generic_plan', true)"
	noSeqScanSetting   = "set_config('enable_seqscan', 'off', true)"
	noHashJoinSetting  = "set_config('enable_hashjoin', 'off', true)"
	noMergeJoinSetting = "set_config('enable_mergejoin', 'off', true)"
	// asyncCommitSetting: see Pool.
	asyncCommitSetting = "set_config('synchronous_commit', 'off', true)"
)

// settingsSQL is one statement that makes the settings.
func settingsSQL(settings ...string) string { return "SELECT " + strings.Join(settings, ", ") }

// plannedOnceSettings are QueryPlannedOnce's settings.
var plannedOnceSettings = []string{noBitmapSetting, noJITSetting, genericPlanSetting, noSeqScanSetting,
	noHashJoinSetting, noMergeJoinSetting}

// The settings statements of QueryIndexWalk and QueryPlannedOnce, with
// and without the asynchronous commit.
var (
	indexWalkSQL        = settingsSQL(noBitmapSetting, noJITSetting)
	indexWalkAsyncSQL   = settingsSQL(noBitmapSetting, noJITSetting, asyncCommitSetting)
	plannedOnceSQL      = settingsSQL(plannedOnceSettings...)
	plannedOnceAsyncSQL = settingsSQL(append(plannedOnceSettings, asyncCommitSetting)...)
)

// QueryIndexWalk is Query for the statements of the delivery path (the
// claim, the completion) whose only good plan walks an index: bitmap
// scans are off for that statement alone. In a burst the runs table grows
// by thousands of rows between two autovacuum analyzes, and on the stale
// statistics the planner took a bitmap scan of every due run, a filter of
// each and a sort, to return the first hundred (325 ms per claim with
// 20,000 due, where the ordered walk of job_runs_claimable_idx takes under
// a millisecond), and a completion ANDed the lease index's thousands of
// entries with the run id's one. A bitmap scan cannot return rows in
// index order, and no plan of these statements needs one. JIT is off too
// (noJITSetting).
func (p *Pool) QueryIndexWalk(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	pre := indexWalkSQL
	if p.async(args) {
		pre = indexWalkAsyncSQL
	}
	return p.queryAfter(ctx, []string{pre}, sql, args...)
}

// QueryPlannedOnce is QueryIndexWalk for a statement whose good plan does
// not depend on its arguments' values: it runs from the connection's
// generic plan of the statement (plan_cache_mode force_generic_plan),
// made once per connection, instead of a plan made for each call's
// values. The claim is such a statement (its walk of
// job_runs_claimable_idx is the cheapest plan whatever its LIMIT, since
// the job's conditions are checked per row walked), and planning it took
// 1.5 ms per call, as long as running it. Through a transaction pooler
// (unnamed statements) it is planned on every call as before.
//
// A generic plan is made without the values, so the planner guesses how
// many rows a CTE yields (a tenth of the due runs for LIMIT $2, thousands
// where a claim takes at most a few hundred), and on that guess it chose
// a sequential scan of a job_runs partition for the claim's update of the
// runs held over their limit. Sequential scans are off for the statement,
// so every table with an index is read through one.
//
// And so are hash and merge joins: such a statement touches a batch of
// runs named by their keys (a claim's, a completion's), so its one good
// join is a nested loop that probes a table by key for each row of the
// batch. A hash or merge join reads the whole of the other side, which
// the generic plan guesses small (a completion's hashed the runs of a
// whole partition, a claim's merged with all of jobs: see fenceEach and
// claimSQLWith).
func (p *Pool) QueryPlannedOnce(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	pre := plannedOnceSQL
	if p.async(args) {
		pre = plannedOnceAsyncSQL
	}
	return p.queryAfter(ctx, []string{pre}, sql, args...)
}

// QueryRowPlannedOnce is QueryPlannedOnce's QueryRow: for a worker's
// fenced write of one run (see fence), whose plan, made for each call,
// took longer than the write itself (about a millisecond, most of it
// pruning the partitions of job_runs; the generic plan prunes them when
// it starts, from the run's partition key in the fence).
func (p *Pool) QueryRowPlannedOnce(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := p.QueryPlannedOnce(ctx, sql, args...)
	return &batchRow{rows: rows, err: err}
}

// ExecPlannedOnce is QueryRowPlannedOnce's Exec.
func (p *Pool) ExecPlannedOnce(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	rows, err := p.QueryPlannedOnce(ctx, sql, args...)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	rows.Close()
	return rows.CommandTag(), rows.Err()
}

// queryAfter sends the settings statements pre and then sql in one batch:
// one round trip and one implicit transaction, so settings made local to
// the transaction cover exactly that statement (also through a pooler in
// transaction mode).
func (p *Pool) queryAfter(ctx context.Context, pre []string, sql string, args ...any) (pgx.Rows, error) {
	b := &pgx.Batch{}
	for _, q := range pre {
		b.Queue(q)
	}
	b.Queue(sql, args...)
	br := p.Pool.SendBatch(ctx, b)
	for range pre {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return nil, err
		}
	}
	rows, err := br.Query()
	if err != nil {
		if rows != nil {
			rows.Close()
		}
		br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

// QueryRow is pgxpool's QueryRow, committing asynchronously with
// AsyncCommit.
func (p *Pool) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if !p.async(args) {
		return p.Pool.QueryRow(ctx, sql, args...)
	}
	rows, err := p.Query(ctx, sql, args...)
	return &batchRow{rows: rows, err: err}
}

// Begin is pgxpool's Begin; with AsyncCommit the transaction commits
// asynchronously.
func (p *Pool) Begin(ctx context.Context) (pgx.Tx, error) {
	return p.BeginTx(ctx, pgx.TxOptions{})
}

// BeginTx is pgxpool's BeginTx; with AsyncCommit the transaction commits
// asynchronously (unless opts.BeginQuery says how to begin).
func (p *Pool) BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	if p.asyncCommit && opts.BeginQuery == "" {
		opts.BeginQuery = beginSQL(opts) + "; SET LOCAL synchronous_commit TO off; SET LOCAL jit TO off"
	}
	return p.Pool.BeginTx(ctx, opts)
}

// beginSQL is the BEGIN statement for opts, as pgx writes it.
func beginSQL(opts pgx.TxOptions) string {
	var b strings.Builder
	b.WriteString("BEGIN")
	if opts.IsoLevel != "" {
		b.WriteString(" ISOLATION LEVEL " + string(opts.IsoLevel))
	}
	if opts.AccessMode != "" {
		b.WriteString(" " + string(opts.AccessMode))
	}
	if opts.DeferrableMode != "" {
		b.WriteString(" " + string(opts.DeferrableMode))
	}
	return b.String()
}

// batchRows are the rows of a batch's second statement; closing them
// closes the batch (and releases its connection). The batch's own error
// (the implicit transaction's commit) is the rows' error.
type batchRows struct {
	pgx.Rows
	br     pgx.BatchResults
	closed bool
	err    error
}

func (r *batchRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *batchRows) Close() {
	if r.closed {
		return
	}
	r.closed = true
	r.Rows.Close()
	r.err = r.br.Close()
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

func (r *batchRows) CommandTag() pgconn.CommandTag { return r.Rows.CommandTag() }

// batchRow is QueryRow's row on batchRows, as pgx's own: the first row,
// or pgx.ErrNoRows.
type batchRow struct {
	rows pgx.Rows
	err  error
}

func (r *batchRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}
