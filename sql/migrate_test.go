package sql_test

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/chronoshq/chronos/internal/syncbuf"
	"github.com/chronoshq/chronos/internal/testwait"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// Two instances starting at once on an empty database: both succeed, the
// schema is applied once.
func TestMigrateConcurrently(t *testing.T) {
	ctx, dsn := parallelURL(t, sqltest.NewEmptyURL)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = sql.Migrate(ctx, dsn) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("migrate %d: %v", i, err)
		}
	}
	// And once more, on the migrated database: nothing to do.
	if err := sql.Migrate(ctx, dsn); err != nil {
		t.Fatalf("migrate again: %v", err)
	}
	conn := sqltest.Connect(t, ctx, dsn)
	var version, tables int
	if err := conn.QueryRow(ctx, "SELECT version FROM public.chronos_schema_version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename IN ('jobs', 'job_runs', 'run_attempts')").Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if version < 1 || tables != 3 {
		t.Fatalf("version %d, %d tables", version, tables)
	}
}

// TestMigrateRetriesOnLockTimeout: a migration that has to wait for a
// lock a long transaction holds gives up after the lock timeout (so it
// never queues everyone else behind itself for longer), and is tried
// again until it gets through.
func TestMigrateRetriesOnLockTimeout(t *testing.T) {
	ctx, dsn := parallelURL(t, sqltest.NewEmptyURL)
	logs := &syncbuf.Buffer{}
	opts := sql.MigrateOptions{Log: slog.New(slog.NewJSONHandler(logs, nil)), LockTimeout: 200 * time.Millisecond, Attempts: 100}
	first := fstest.MapFS{"001_busy.sql": {Data: []byte("CREATE TABLE busy (id int); INSERT INTO busy VALUES (1);")}}
	if err := sql.MigrateFSForTest(ctx, dsn, first, opts); err != nil {
		t.Fatal(err)
	}
	// A long transaction reads the table: an ALTER must wait for it.
	holder := sqltest.Connect(t, ctx, dsn)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE busy IN ACCESS SHARE MODE"); err != nil {
		t.Fatal(err)
	}
	both := fstest.MapFS{
		"001_busy.sql":  first["001_busy.sql"],
		"002_alter.sql": {Data: []byte("ALTER TABLE busy ADD COLUMN x int;")},
	}
	done := make(chan error, 1)
	go func() { done <- sql.MigrateFSForTest(ctx, dsn, both, opts) }()

	// While the migration keeps trying, other sessions are blocked for at
	// most about one lock timeout at a time.
	reader := sqltest.Connect(t, ctx, dsn)
	var longest time.Duration
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(logs.String(), "retrying") < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("no retries logged within 30 s:\n%s", logs.String())
		}
		start := time.Now()
		var n int
		if err := reader.QueryRow(ctx, "SELECT count(*) FROM busy").Scan(&n); err != nil {
			t.Fatal(err)
		}
		longest = max(longest, time.Since(start))
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("migration ended while the lock was held: %v", err)
	default:
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	testwait.Nil(t, done, 30*time.Second, "migrate after the lock was released")
	var has bool
	if err := reader.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_name = 'busy' AND column_name = 'x')`).Scan(&has); err != nil || !has {
		t.Fatalf("column x not added (%v)", err)
	}
	t.Logf("a reader waited at most %s while the migration retried", longest)
	if longest > 5*time.Second {
		t.Errorf("a reader waited %s behind the waiting migration", longest)
	}
	if !strings.Contains(logs.String(), `"msg":"applying migration"`) {
		t.Errorf("the runner did not log through the given logger:\n%s", logs.String())
	}
}

// TestMigrateNoTransaction: a migration with the no-transaction header
// runs outside a transaction, statement by statement, so it can build an
// index CONCURRENTLY; notices go to the configured logger.
func TestMigrateNoTransaction(t *testing.T) {
	ctx, dsn := parallelURL(t, sqltest.NewEmptyURL)
	logs := &syncbuf.Buffer{}
	opts := sql.MigrateOptions{Log: slog.New(slog.NewJSONHandler(logs, nil))}
	fsys := fstest.MapFS{
		"001_busy.sql": {Data: []byte("CREATE TABLE busy (id int); INSERT INTO busy SELECT generate_series(1, 1000);")},
		"002_index.sql": {Data: []byte(sql.NoTransactionHeader + `
-- An index built without blocking writes.
DROP INDEX CONCURRENTLY IF EXISTS busy_id_idx;
CREATE INDEX CONCURRENTLY busy_id_idx ON busy (id);
`)},
		"003_notice.sql": {Data: []byte(`DO $$ BEGIN RAISE NOTICE 'renamed 2 jobs'; END $$;`)},
	}
	if err := sql.MigrateFSForTest(ctx, dsn, fsys, opts); err != nil {
		t.Fatal(err)
	}
	conn := sqltest.Connect(t, ctx, dsn)
	var valid bool
	if err := conn.QueryRow(ctx, `SELECT indisvalid FROM pg_index WHERE indexrelid = 'busy_id_idx'::regclass`).Scan(&valid); err != nil || !valid {
		t.Fatalf("busy_id_idx valid=%v (%v)", valid, err)
	}
	if !strings.Contains(logs.String(), `"msg":"migration notice","message":"renamed 2 jobs"`) {
		t.Errorf("the notice is not in the configured logger's output:\n%s", logs.String())
	}
}
