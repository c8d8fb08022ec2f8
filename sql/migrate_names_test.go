package sql_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chronoshq/chronos/sql/sqltest"
)

// TestMigrationRenamesDuplicateNames: migration 008 keeps each name on its
// oldest job, renames the later ones <name>-<id> (never onto a name that
// is taken), reports each rename as a NOTICE, and then names are unique.
func TestMigrationRenamesDuplicateNames(t *testing.T) {
	ctx, dsn := parallelURL(t, sqltest.NewEmptyURL)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		notices []string
	)
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		defer mu.Unlock()
		notices = append(notices, n.Message)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	m := sqltest.MigrateTo(t, ctx, conn, 7)
	// ids 1..5: a, a, b, a-2 (the name job 2 would get), a.
	for _, name := range []string{"a", "a", "b", "a-2", "a"} {
		if _, err := conn.Exec(ctx, `INSERT INTO jobs (name, cron_expr, target_url) VALUES ($1, '* * * * *', 'http://x')`, name); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.MigrateTo(ctx, 8); err != nil {
		t.Fatal(err)
	}
	rows, _ := conn.Query(ctx, `SELECT name FROM jobs ORDER BY id`)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if names[0] != "a" || names[2] != "b" || names[3] != "a-2" || names[4] != "a-5" ||
		!strings.HasPrefix(names[1], "a-2-") || len(names[1]) != len("a-2-")+8 {
		t.Fatalf("names after the migration: %q", names)
	}
	mu.Lock()
	got := strings.Join(notices, "\n")
	mu.Unlock()
	if !strings.Contains(got, "job 2 renamed from 'a' to '"+names[1]+"'") || !strings.Contains(got, "job 5 renamed from 'a' to 'a-5'") ||
		!strings.Contains(got, "2 jobs with duplicate names renamed") {
		t.Fatalf("notices:\n%s", got)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO jobs (name, cron_expr, target_url) VALUES ('b', '* * * * *', 'http://x')`); err == nil {
		t.Fatal("a duplicate name was accepted")
	}
}
