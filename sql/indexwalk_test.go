package sql_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// TestDeliveryPathWalksIndexesOnStaleStatistics: the claim and the
// completion walk their indexes even when the statistics say job_runs is
// empty and 20,000 runs are due, as they do in a burst between two
// autovacuum analyzes. On such statistics the planner took a bitmap scan
// of every due run, filtered each and sorted them all to lease the first
// hundred (325 ms per claim, every claim of the burst: quadratic), and a
// completion ANDed the lease index's every entry with the run id's.
// (Sorting is left allowed: with sorts off the planner's choices inside
// the statement's triggers made a claim take seconds.)
func TestDeliveryPathWalksIndexesOnStaleStatistics(t *testing.T) {
	t.Parallel()
	db := sqltest.New(t)
	ctx := t.Context()
	job := mustCreate(t, db, cronJob("0 3 * * *"))
	if _, err := db.EnsureRunPartitions(ctx, time.Hour, 4*time.Hour); err != nil {
		t.Fatal(err)
	}
	// Statistics of a quiet hour (a history of finished runs), then no
	// analyze: stale, as in a burst.
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO job_runs (job_id, scheduled_at, trigger, status, available_at, finished_at)
		SELECT $1, now() - make_interval(secs => g), 'manual', 'succeeded', now() - make_interval(secs => g), now()
		  FROM generate_series(1, 2000) g`, job.ID); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"ANALYZE job_runs",
		`DO $$ DECLARE p regclass; BEGIN
		   FOR p IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'job_runs'::regclass LOOP
		     EXECUTE format('ALTER TABLE %s SET (autovacuum_enabled = off)', p);
		   END LOOP; END $$`,
	} {
		if _, err := db.Pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at)
		SELECT $1, now() + make_interval(secs => g / 1000.0), 'manual', now() - interval '1 second'
		  FROM generate_series(1, 20000) g`, job.ID); err != nil {
		t.Fatal(err)
	}
	explain := func(stmt string, args ...any) string {
		t.Helper()
		rows, err := db.Pool.QueryIndexWalk(ctx, "EXPLAIN "+stmt, args...)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(lines, "\n")
	}

	claim := explain(sql.ClaimSQLForTest, "w", 100, int64(30e6), int64(0))
	if strings.Contains(claim, "Bitmap") {
		t.Errorf("the claim plans a bitmap scan of the due runs:\n%s", claim)
	}
	ids := []int64{1, 2, 3}
	complete := explain(sql.CompleteSQLForTest, ids, []string{"w", "w", "w"}, []int32{1, 1, 1},
		[]bool{true, true, true}, []*int32{nil, nil, nil}, []*string{nil, nil, nil}, []*string{nil, nil, nil},
		[]int64{0, 0, 0}, []*int64{nil, nil, nil}, []bool{false, false, false})
	if strings.Contains(complete, "Bitmap") {
		t.Errorf("the completion plans a bitmap scan:\n%s", complete)
	}

	// The setting was the statement's alone.
	var v string
	if err := db.Pool.QueryRow(ctx, "SHOW enable_bitmapscan").Scan(&v); err != nil || v != "on" {
		t.Errorf("enable_bitmapscan = %q (%v) after the statement, want on", v, err)
	}
}
