package sql_test

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"

	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// TestOnlineIndexesOnPartitions: an online-indexes migration gives a
// partitioned table's index to every partition (built CONCURRENTLY,
// attached: the parent is valid), gives a plain table its index, runs
// again as a no-op after a crash midway (a partition without its index,
// an invalid index left by a failed build), and refuses a statement that
// is not a CREATE INDEX.
func TestOnlineIndexesOnPartitions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := sqltest.NewEmptyURL(t)
	files := migrationFiles(t)
	quiet := sql.MigrateOptions{Log: slog.New(slog.DiscardHandler)}
	all := upTo(files, len(files)).(fstest.MapFS)
	next := len(files) + 1
	name := func(v int, s string) string { return fmt.Sprintf("%03d_%s.sql", v, s) }
	all[name(next, "test_online")] = &fstest.MapFile{Data: []byte(sql.OnlineIndexesHeader + `
-- runs by trigger, and jobs by method
CREATE INDEX test_runs_trigger_idx ON job_runs (trigger, id)
    WHERE status = 'pending';
CREATE INDEX test_jobs_method_idx ON jobs (method);
`)}
	if err := sql.MigrateFSForTest(ctx, dsn, all, quiet); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	check := func(when string) {
		t.Helper()
		var parts, attached int
		var valid, jobsValid bool
		if err := conn.QueryRow(ctx, `
			SELECT (SELECT count(*) FROM pg_inherits WHERE inhparent = 'job_runs'::regclass),
			       (SELECT count(*) FROM pg_inherits WHERE inhparent = 'test_runs_trigger_idx'::regclass),
			       (SELECT indisvalid FROM pg_index WHERE indexrelid = 'test_runs_trigger_idx'::regclass),
			       (SELECT indisvalid FROM pg_index WHERE indexrelid = 'test_jobs_method_idx'::regclass)`).
			Scan(&parts, &attached, &valid, &jobsValid); err != nil {
			t.Fatal(err)
		}
		if parts < 2 || attached != parts || !valid || !jobsValid {
			t.Fatalf("%s: %d partitions, %d with the index attached, parent valid %v, jobs index valid %v", when, parts, attached, valid, jobsValid)
		}
	}
	check("after the migration")

	// A crash midway: one partition's index gone (the parent invalid
	// again), the jobs index left invalid by a failed build. Run again.
	var child string
	if err := conn.QueryRow(ctx, `SELECT inhrelid::regclass::text FROM pg_inherits WHERE inhparent = 'test_runs_trigger_idx'::regclass LIMIT 1`).Scan(&child); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		"DROP INDEX test_runs_trigger_idx",
		"CREATE INDEX test_runs_trigger_idx ON ONLY job_runs (trigger, id) WHERE status = 'pending'",
		"UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'test_jobs_method_idx'::regclass",
		"UPDATE " + "chronos_schema_version" + " SET version = " + strconv.Itoa(next-1),
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if err := sql.MigrateFSForTest(ctx, dsn, all, quiet); err != nil {
		t.Fatal(err)
	}
	check("after running again")

	// Anything but CREATE INDEX is refused, before it runs.
	bad := upTo(files, len(files)).(fstest.MapFS)
	bad[name(next, "test_online")] = &fstest.MapFile{Data: []byte(sql.OnlineIndexesHeader + "\nDROP TABLE jobs;\n")}
	if _, err := conn.Exec(ctx, "UPDATE "+"chronos_schema_version"+" SET version = "+strconv.Itoa(next-1)); err != nil {
		t.Fatal(err)
	}
	if err := sql.MigrateFSForTest(ctx, dsn, bad, quiet); err == nil {
		t.Fatal("a DROP TABLE in an online-indexes migration ran")
	}
	var jobs bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('jobs') IS NOT NULL").Scan(&jobs); err != nil || !jobs {
		t.Fatalf("jobs still there: %v %v", jobs, err)
	}
}
