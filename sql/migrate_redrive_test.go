package sql_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// TestMigrationKeepsOneActiveRedrive: a version before migration 007
// could store two active redrives of one run (two concurrent redrives
// each saw none), and 007's unique index on active redrives would then
// fail the upgrade (issue 23). The migration keeps the redrive furthest
// along (running, then leased, then pending; the oldest among equals),
// deletes the other pending ones, marks another one in flight dead with
// the reason, reports each as a notice, and builds its index.
func TestMigrationKeepsOneActiveRedrive(t *testing.T) {
	ctx, dsn := parallelURL(t, sqltest.NewEmptyURL)
	files := migrationFiles(t)
	if err := sql.MigrateFSForTest(ctx, dsn, upTo(files, 6), sql.MigrateOptions{Log: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatal(err)
	}
	conn := sqltest.Connect(t, ctx, dsn)
	var job int64
	if err := conn.QueryRow(ctx, `INSERT INTO jobs (name, cron_expr, target_url) VALUES ('j', '* * * * *', 'http://x') RETURNING id`).Scan(&job); err != nil {
		t.Fatal(err)
	}
	run := func(trigger, status string, redriveOf *int64) int64 {
		t.Helper()
		lease := status == "leased" || status == "running"
		var id int64
		err := conn.QueryRow(ctx, `INSERT INTO job_runs (job_id, scheduled_at, trigger, redrive_of, status, leased_by, leased_until)
			VALUES ($1, now(), $2, $3, $4, CASE WHEN $5 THEN 'w' END, CASE WHEN $5 THEN now() + interval '1 minute' END) RETURNING id`,
			job, trigger, redriveOf, status, lease).Scan(&id)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	// Run a: redriven three times, one of them leased (it is kept).
	a := run("manual", "dead", nil)
	aPending1 := run("redrive", "pending", &a)
	aLeased := run("redrive", "leased", &a)
	aPending2 := run("redrive", "pending", &a)
	aDone := run("redrive", "succeeded", &a) // not active: untouched
	// Run b: one pending, one leased, one running redrive: the running
	// one is kept, the pending one deleted, the leased one marked dead.
	b := run("manual", "dead", nil)
	bPending := run("redrive", "pending", &b)
	bLeased := run("redrive", "leased", &b)
	bRunning := run("redrive", "running", &b)
	// Run c: one active redrive, as it should be.
	c := run("manual", "dead", nil)
	cPending := run("redrive", "pending", &c)

	var log noticeLog
	if err := sql.MigrateFSForTest(ctx, dsn, upTo(files, 7), sql.MigrateOptions{Log: slog.New(&log)}); err != nil {
		t.Fatalf("migration 007 over duplicate active redrives: %v", err)
	}
	status := sqltest.Map[int64, string](t, ctx, conn, `SELECT id, status FROM job_runs`)
	want := map[int64]string{
		a: "dead", aPending1: "", aLeased: "leased", aPending2: "", aDone: "succeeded",
		b: "dead", bPending: "", bLeased: "dead", bRunning: "running",
		c: "dead", cPending: "pending",
	}
	for id, w := range want {
		if status[id] != w {
			t.Errorf("run %d: status %q after the migration, want %q (\"\": deleted)", id, status[id], w)
		}
	}
	var reason string
	if err := conn.QueryRow(ctx, `SELECT coalesce(last_error, '') FROM job_runs WHERE id = $1`, bLeased).Scan(&reason); err != nil ||
		!strings.Contains(reason, "second active redrive") {
		t.Errorf("the redrive marked dead says %q (%v)", reason, err)
	}
	if got := strings.Join(log.all(), "\n"); strings.Count(got, "a second active redrive") != 4 {
		t.Errorf("notices:\n%s\nwant one for each of the 4 redrives dropped", got)
	}
	var valid bool
	if err := conn.QueryRow(ctx, `SELECT indisvalid FROM pg_index WHERE indexrelid = 'job_runs_active_redrive_key'::regclass`).Scan(&valid); err != nil || !valid {
		t.Fatalf("job_runs_active_redrive_key valid %v (%v)", valid, err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO job_runs (job_id, scheduled_at, trigger, redrive_of) VALUES ($1, now(), 'redrive', $2)`, job, c); err == nil {
		t.Fatal("a second active redrive was stored after the migration")
	}
}

// noticeLog keeps the runner's "migration notice" messages.
type noticeLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *noticeLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *noticeLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *noticeLog) WithGroup(string) slog.Handler            { return l }
func (l *noticeLog) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "message" {
			l.mu.Lock()
			l.msgs = append(l.msgs, a.Value.String())
			l.mu.Unlock()
		}
		return true
	})
	return nil
}

func (l *noticeLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.msgs...)
}
