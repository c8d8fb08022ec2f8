package sql

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// RefreshQueueStatsSQLForTest lets the external tests EXPLAIN the query.
const RefreshQueueStatsSQLForTest = refreshQueueStatsSQL

// ExplainJobs returns the plans (EXPLAIN ANALYZE) of the queries Jobs
// runs for f's first page, each after its text, for BenchmarkJobSearch.
func ExplainJobs(ctx context.Context, db *DB, f JobFilter) ([]string, error) {
	p := &plans{}
	if _, _, err := db.Jobs(context.WithValue(ctx, planKey{}, p), f); err != nil {
		return nil, err
	}
	return p.lines, nil
}

// ExplainClaim returns the plan (EXPLAIN, not run) of the claim of n runs.
func ExplainClaim(ctx context.Context, db *DB, n int) ([]string, error) {
	rows, err := db.Pool.Query(ctx, "EXPLAIN (COSTS OFF) "+claimSQL, "explain", n, int64(60_000_000), int64(20_000))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// ExplainClaimGeneric returns the generic plan of the claim of n runs:
// the plan QueryPlannedOnce runs it from.
func ExplainClaimGeneric(ctx context.Context, db *DB, n int) ([]string, error) {
	return ExplainGeneric(ctx, db, claimSQL, "text, int, bigint, bigint", fmt.Sprintf("'explain', %d, 60000000, 20000", n))
}

// ExplainGeneric returns the generic plan (EXPLAIN EXECUTE under
// plan_cache_mode force_generic_plan, not run) of statement q, whose
// parameters have the given types, executed with args (SQL literals):
// the plan QueryPlannedOnce runs q from. It fails on a plan that is not
// generic.
func ExplainGeneric(ctx context.Context, db *DB, q, types, args string) ([]string, error) {
	return ExplainGenericWith(ctx, db, nil, q, types, args)
}

// ExplainGenericWith is ExplainGeneric with more settings made for the
// plan (SET LOCAL statements), to see what the plan is when the planner
// guesses otherwise.
func ExplainGenericWith(ctx context.Context, db *DB, settings []string, q, types, args string) ([]string, error) {
	tx, err := db.Pool.Pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // read only; the rollback ends it
	for _, q := range append([]string{
		"PREPARE generic_plan (" + types + ") AS " + q,
		plannedOnceSQL, // the settings sql.Pool.QueryPlannedOnce runs it with
	}, settings...) {
		if _, err := tx.Exec(ctx, q); err != nil {
			return nil, err
		}
	}
	rows, err := tx.Query(ctx, "EXPLAIN (COSTS OFF) EXECUTE generic_plan("+args+")")
	if err != nil {
		return nil, err
	}
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	var generic int64
	if err := tx.QueryRow(ctx, "SELECT generic_plans FROM pg_prepared_statements WHERE name = 'generic_plan'").Scan(&generic); err != nil {
		return nil, err
	}
	if generic == 0 {
		return nil, fmt.Errorf("not a generic plan:\n%s", strings.Join(plan, "\n"))
	}
	_, err = tx.Exec(ctx, "DEALLOCATE generic_plan")
	return plan, err
}

// CreateStats reports, for tests, how many coalesced create batches were
// written and how many creates are queued for a writer.
func CreateStats(db *DB) (batches int64, queued int) {
	db.creates.mu.Lock()
	defer db.creates.mu.Unlock()
	return db.creates.batches, len(db.creates.queue)
}

// ClaimSQLForTest, StartSQLForTest and CompleteSQLForTest let the
// external tests EXPLAIN the delivery path's statements.
var (
	ClaimSQLForTest = claimSQL
	StartSQLForTest = startSQL
	// ReclaimSQLForTest is Reclaim's statement ($1 limit, $2 the error),
	// for a test that runs it in a transaction of its own.
	ReclaimSQLForTest  = reclaimSQL
	CompleteSQLForTest = completeSQL
	// ClaimSQLBeforeLimitsForTest is the claim on a database before 022.
	ClaimSQLBeforeLimitsForTest = claimSQLBeforeLimits
	// ClaimSQL028ForTest is the claim on a database from 022 to 033, and
	// the claim of the release before 034.
	ClaimSQL028ForTest = claimSQL028
	// CompleteSQLBeforeLimitsForTest is the completion on a database
	// before 022.
	CompleteSQLBeforeLimitsForTest = completeSQLBeforeLimits
)

// The materializer's settings and the statements that read and advance a
// batch of jobs, for the external tests to EXPLAIN.
var MaterializeSettingsForTest = strings.Join(materializeSettings, ", ")

const (
	DueJobsSQLForTest          = dueJobsSQL
	EarlyJobsSQLForTest        = earlyJobsSQL
	AdvanceSchedulesSQLForTest = advanceSchedulesSQL
)

// FenceForTest is the WHERE clause of a worker's write of its run.
const FenceForTest = fence

// PartitionTxForTest runs f as partition upkeep does (partitionTx).
func PartitionTxForTest(ctx context.Context, db *DB, f func(pgx.Tx) error) error {
	return db.partitionTx(ctx, "test upkeep", f)
}

// AnalyzeChangedTablesForTest is AnalyzeChangedTables with gap for the
// least time between two analyzes of a table whose row count did not jump.
func AnalyzeChangedTablesForTest(ctx context.Context, db *DB, gap time.Duration) ([]string, error) {
	return db.analyzeChangedTables(ctx, gap)
}

// LockPartitionForTest is lockPartition: parent's lock in mode and then
// part's ACCESS EXCLUSIVE in tx, or neither and ErrLockRefusedForTest.
var LockPartitionForTest = lockPartition

// ErrLockRefusedForTest is errLockRefused.
var ErrLockRefusedForTest = errLockRefused

// LeaderKeyForTest is the leadership lock's key, for tests that hold it
// as a binary from before the schema's minimum would.
const LeaderKeyForTest = leaderKey

// CreateMaxBatch is createMaxBatch for tests.
const CreateMaxBatch = createMaxBatch

// CreateSecondAt is createSecondAt for tests.
const CreateSecondAt = createSecondAt

// NextAvailableSQL is NextAvailable's statement ($1: how many candidates
// to walk while a host holds runs).
var NextAvailableSQL = nextAvailableSQL
