package sql_test

import (
	"sync"
	"testing"

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
