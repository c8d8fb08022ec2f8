package sql_test

import (
	"io/fs"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// schedulesMigration is the number of the migration that adds
// job_schedules (found by name: migrations are renumbered at merges).
func schedulesMigration(t *testing.T) int32 {
	t.Helper()
	entries, err := fs.ReadDir(sql.Migrations(), ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if num, name, ok := strings.Cut(e.Name(), "_"); ok && name == "job_schedules.sql" {
			n, err := strconv.Atoi(num)
			if err != nil {
				t.Fatal(err)
			}
			return int32(n)
		}
	}
	t.Fatal("no job_schedules migration")
	return 0
}

// The upgrade to job_schedules on a database with jobs in it: every job
// gets its schedule row with the next_run_at it had (cron jobs, paused
// ones, one-shots pending, fired and paused), jobs.next_run_at is cleared,
// and materializing afterwards creates each due occurrence once, no more
// and none lost. A writer of the old shape then still works through the
// triggers, and an older binary's materializer is refused with a clear
// message.
func TestMigrationFillsJobSchedules(t *testing.T) {
	ctx, dsn := parallelURL(t, sqltest.NewEmptyURL)
	conn := sqltest.Connect(t, ctx, dsn)
	n := schedulesMigration(t)
	m := sqltest.MigrateTo(t, ctx, conn, n-1)
	var now time.Time
	if err := conn.QueryRow(ctx, "SELECT date_trunc('second', now())").Scan(&now); err != nil {
		t.Fatal(err)
	}
	now = now.UTC()
	soon := now.Add(time.Second)
	past := now.Add(-time.Hour)
	// The jobs as the old binary left them: name, cron, run_at, enabled,
	// next_run_at.
	type old struct {
		name    string
		cron    *string
		runAt   *time.Time
		enabled bool
		next    *time.Time
	}
	// Yearly: its occurrence after soon is never inside the materializer's
	// 2 s below (a minutely one was, when the test read the clock at
	// second 58 or 59: two runs, not one).
	yearly := "0 0 0 1 1 *" // next occurrence set by hand to soon below
	olds := []old{
		{"cron-due-soon", &yearly, nil, true, &soon},
		{"cron-paused", &yearly, nil, false, nil},
		{"oneshot-pending", nil, &soon, true, &soon},
		{"oneshot-fired", nil, &past, true, nil},
		{"oneshot-paused", nil, &soon, false, &soon},
	}
	ids := map[string]int64{}
	for _, o := range olds {
		var id int64
		if err := conn.QueryRow(ctx, `
			INSERT INTO jobs (name, cron_expr, run_at, target_url, enabled, next_run_at)
			VALUES ($1, $2, $3, 'http://127.0.0.1:9/x', $4, $5) RETURNING id`,
			o.name, o.cron, o.runAt, o.enabled, o.next).Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids[o.name] = id
	}
	// The fired one-shot's run, done.
	if _, err := conn.Exec(ctx, `INSERT INTO job_runs (job_id, scheduled_at, trigger, status, finished_at)
		VALUES ($1, $2, 'schedule', 'succeeded', $2)`, ids["oneshot-fired"], past); err != nil {
		t.Fatal(err)
	}

	if err := m.MigrateTo(ctx, n); err != nil {
		t.Fatal(err)
	}
	for _, o := range olds {
		var (
			enabled, cron bool
			next          *time.Time
		)
		if err := conn.QueryRow(ctx, "SELECT enabled, cron, next_run_at FROM job_schedules WHERE job_id = $1",
			ids[o.name]).Scan(&enabled, &cron, &next); err != nil {
			t.Fatalf("%s: schedule row: %v", o.name, err)
		}
		if enabled != o.enabled || cron != (o.cron != nil) || (next == nil) != (o.next == nil) ||
			next != nil && !next.Equal(*o.next) {
			t.Errorf("%s: schedule row enabled %v cron %v next %v, want %v %v %v", o.name, enabled, cron, next,
				o.enabled, o.cron != nil, o.next)
		}
	}
	var left int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM jobs WHERE next_run_at IS NOT NULL").Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d jobs keep next_run_at (%v), want none", left, err)
	}

	// The new binary migrates the rest of the way (it reads tables of
	// later migrations: job_calendars) and materializes: the cron job's and
	// the pending one-shot's occurrences once each, nothing for the others;
	// and again changes nothing.
	if err := sql.Migrate(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	db := sqltest.Open(t, dsn, "upgrade-test")
	for range 2 {
		if _, err := db.Materialize(ctx, now, 2*time.Second, 100); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := conn.Query(ctx, "SELECT j.name, count(r.id) FROM jobs j LEFT JOIN job_runs r ON r.job_id = j.id GROUP BY j.name")
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	var (
		name string
		c    int
	)
	if _, err := pgx.ForEachRow(rows, []any{&name, &c}, func() error { counts[name] = c; return nil }); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"cron-due-soon": 1, "cron-paused": 0, "oneshot-pending": 1, "oneshot-fired": 1, "oneshot-paused": 0}
	for k, v := range want {
		if counts[k] != v {
			t.Errorf("%s has %d runs after materializing, want %d", k, counts[k], v)
		}
	}
	// The paused one-shot still fires once resumed. (Read by this
	// binary, whose job columns need every migration.)
	if err := m.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	j, err := db.Job(ctx, ids["oneshot-paused"])
	if err != nil {
		t.Fatal(err)
	}
	if j.NextRunAt != nil {
		t.Errorf("paused one-shot shows next_run_at %v, want null", j.NextRunAt)
	}

	// A writer of the old shape: its next_run_at is moved to the schedule
	// row.
	var id int64
	if err := conn.QueryRow(ctx, `INSERT INTO jobs (name, cron_expr, target_url, next_run_at)
		VALUES ('old-writer', '0 * * * * *', 'http://127.0.0.1:9/x', $1) RETURNING id`, soon).Scan(&id); err != nil {
		t.Fatal(err)
	}
	var jobsNext, schedNext *time.Time
	if err := conn.QueryRow(ctx, `SELECT j.next_run_at, s.next_run_at FROM jobs j JOIN job_schedules s ON s.job_id = j.id
		WHERE j.id = $1`, id).Scan(&jobsNext, &schedNext); err != nil {
		t.Fatal(err)
	}
	if jobsNext != nil || schedNext == nil || !schedNext.Equal(soon) {
		t.Errorf("old-shape insert: jobs.next_run_at %v, job_schedules.next_run_at %v, want null and %v", jobsNext, schedNext, soon)
	}
	// An older binary's materializer advancing jobs.next_run_at.
	_, err = conn.Exec(ctx, "UPDATE jobs SET next_run_at = now() + interval '1 hour' WHERE id = $1", id)
	if err == nil || !strings.Contains(err.Error(), "this database is migrated for a newer chronos; upgrade this instance") {
		t.Fatalf("an old materializer's update: %v, want the upgrade error", err)
	}
}
