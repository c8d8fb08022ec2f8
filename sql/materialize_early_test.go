package sql_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// earlyAt reads a job's materialize_at (nil: the lookahead alone).
func earlyAt(t testing.TB, db *sql.DB, id int64) *time.Time {
	t.Helper()
	var at *time.Time
	if err := db.Pool.QueryRow(t.Context(), "SELECT materialize_at FROM job_schedules WHERE job_id = $1", id).Scan(&at); err != nil {
		t.Fatal(err)
	}
	if at != nil {
		u := at.UTC()
		at = &u
	}
	return at
}

// materializeAt is one materializer call at now with the reactor's
// lookahead; it returns the runs it created.
func materializeAt(t testing.TB, db *sql.DB, now time.Time) int {
	t.Helper()
	res, err := db.Materialize(t.Context(), now, 2*time.Second, 100)
	if err != nil {
		t.Fatal(err)
	}
	return res.Created
}

// A sparse job's next run is created as soon as the one before it is due,
// at most sql.EarlyLookahead ahead (a herd's runs exist before its
// instant), once, and never before that; a frequent job's only within the
// lookahead.
func TestMaterializeEarlySparseJob(t *testing.T) {
	db, _ := parallelDB(t)
	base := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	minutely := mustCreate(t, db, cronJob("* * * * *"))
	setNextRunAt(t, db, minutely.ID, ptr(base.Add(time.Minute)))
	if n := materializeAt(t, db, base.Add(10*time.Second)); n != 0 {
		t.Fatalf("a fresh job's first run created %d runs 50 s ahead: only within the lookahead", n)
	}
	if n := materializeAt(t, db, base.Add(59*time.Second)); n != 1 {
		t.Fatalf("within the lookahead: %d runs, want 1", n)
	}
	// 12:02's run may be created from 12:01:30 (30 s ahead), not before.
	if got, want := earlyAt(t, db, minutely.ID), base.Add(90*time.Second); got == nil || !got.Equal(want) {
		t.Fatalf("materialize_at %v, want %v", got, want)
	}
	if n := materializeAt(t, db, base.Add(89*time.Second)); n != 0 {
		t.Fatalf("31 s ahead: %d runs created, want none", n)
	}
	if n := materializeAt(t, db, base.Add(90*time.Second)); n != 1 {
		t.Fatalf("30 s ahead: %d runs created, want the next one", n)
	}
	if n := materializeAt(t, db, base.Add(100*time.Second)); n != 0 {
		t.Fatalf("again 20 s ahead: %d runs created, want none (one run ahead at most)", n)
	}
	if total, _ := countRuns(t, db, minutely.ID); total != 2 {
		t.Fatalf("%d runs, want 12:01 and 12:02", total)
	}
	j, err := db.Job(t.Context(), minutely.ID)
	if err != nil || !j.NextRunAt.Equal(base.Add(3*time.Minute)) {
		t.Fatalf("next_run_at %v (%v), want 12:03", j.NextRunAt, err)
	}

	// Every 5 s: the next run from the instant of the one before it (5 s
	// ahead); every second: the lookahead alone.
	fives := mustCreate(t, db, cronJob("*/5 * * * * *"))
	setNextRunAt(t, db, fives.ID, ptr(base.Add(5*time.Minute)))
	materializeAt(t, db, base.Add(5*time.Minute-time.Second))
	if got, want := earlyAt(t, db, fives.ID), base.Add(5*time.Minute); got == nil || !got.Equal(want) {
		t.Fatalf("every 5 s: materialize_at %v, want the last run's instant %v", got, want)
	}
	secs := mustCreate(t, db, cronJob("* * * * * *"))
	setNextRunAt(t, db, secs.ID, ptr(base.Add(5*time.Minute)))
	materializeAt(t, db, base.Add(5*time.Minute-time.Second))
	if got := earlyAt(t, db, secs.ID); got != nil {
		t.Fatalf("every second: materialize_at %v, want none", got)
	}
}

// Any write that moves next_run_at without materialize_at (an edit, a
// pause, a resume, a calendar's re-plan, an outage simulated by hand)
// clears it: it never points at an occurrence that is no longer the next.
func TestEarlyMaterializationClearedByEdits(t *testing.T) {
	db, ctx := parallelDB(t)
	// A fixed instant, far from the top of an hour: from the database's
	// clock, in the last seconds of an hour the next occurrence came
	// within the lookahead of the run just created, and there was no
	// early instant to set (a CI run just before 04:00 failed so).
	now := time.Date(2026, 6, 1, 12, 10, 0, 0, time.UTC)
	j := mustCreate(t, db, cronJob("0 * * * *"))
	setNextRunAt(t, db, j.ID, ptr(now.Add(time.Second)))
	if n := materializeAt(t, db, now); n != 1 {
		t.Fatalf("%d runs, want 1", n)
	}
	if earlyAt(t, db, j.ID) == nil {
		t.Fatal("an hourly job has no materialize_at after its run was created")
	}
	if _, err := db.UpdateJob(ctx, j.ID, &chronos.JobUpdate{CronExpr: chronos.Some("30 * * * *")}); err != nil {
		t.Fatal(err)
	}
	if got := earlyAt(t, db, j.ID); got != nil {
		t.Fatalf("after a schedule edit materialize_at is %v, want none", got)
	}
	if n := materializeAt(t, db, now.Add(2*time.Second)); n > 1 {
		t.Fatalf("%d runs after the edit", n)
	}
	setNextRunAt(t, db, j.ID, ptr(now.Add(time.Hour)))
	if got := earlyAt(t, db, j.ID); got != nil {
		t.Fatalf("after next_run_at moved by hand materialize_at is %v, want none", got)
	}
}

// A job whose run was created early and then missed it and the next one
// (no leader) has a gap like any other: misfire "one" folds the early run
// into one catch-up, never two requests.
func TestEarlyRunFoldedIntoCatchUp(t *testing.T) {
	db, _ := parallelDB(t)
	base := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	j := mustCreate(t, db, cronJob("* * * * *"))
	setNextRunAt(t, db, j.ID, ptr(base.Add(time.Minute)))
	materializeAt(t, db, base.Add(59*time.Second))  // 12:01
	materializeAt(t, db, base.Add(100*time.Second)) // 12:02, early
	// No leader until 12:05:10: 12:01 and 12:02 (created) and 12:03 to
	// 12:05 (not) were missed.
	materializeAt(t, db, base.Add(5*time.Minute+10*time.Second))
	var pending, catchUps int
	if err := db.Pool.QueryRow(t.Context(), `SELECT count(*) FILTER (WHERE scheduled_at <= $2),
	        count(*) FILTER (WHERE catch_up) FROM job_runs WHERE job_id = $1 AND status = 'pending'`,
		j.ID, base.Add(5*time.Minute+10*time.Second)).Scan(&pending, &catchUps); err != nil {
		t.Fatal(err)
	}
	if pending != 1 || catchUps != 1 {
		t.Fatalf("after the gap: %d runs due, %d catch-ups; want one catch-up alone", pending, catchUps)
	}
}

// A job created long before its first occurrence has that run created as
// early as the runs after it will be: a herd of new hourly jobs due at the
// top of the hour has its runs 30 s before it. A one-shot's and a paused
// job's runs are created within the lookahead only.
func TestCreatedJobsFirstRunEarly(t *testing.T) {
	db, ctx := parallelDB(t)
	hourly := mustCreate(t, db, cronJob("0 * * * *"))
	if got := earlyAt(t, db, hourly.ID); got == nil || !got.Equal(hourly.NextRunAt.Add(-sql.EarlyLookahead)) {
		t.Fatalf("hourly job: materialize_at %v, want %v", got, hourly.NextRunAt.Add(-sql.EarlyLookahead))
	}
	paused := cronJob("0 * * * *")
	paused.Enabled = false
	paused = mustCreate(t, db, paused)
	once := cronJob("")
	once.CronExpr, once.RunAt = nil, ptr(dbNow(t, db).Add(time.Hour))
	once = mustCreate(t, db, once)
	for _, id := range []int64{paused.ID, once.ID} {
		if got := earlyAt(t, db, id); got != nil {
			t.Fatalf("job %d: materialize_at %v, want none", id, got)
		}
	}
	// 25 s before the hour: the hourly job's run is created, the
	// one-shot's (due then too, had it been) is not.
	now := hourly.NextRunAt.Add(-25 * time.Second)
	if _, err := db.Pool.Exec(ctx, "UPDATE job_schedules SET next_run_at = $2 WHERE job_id = $1", once.ID, hourly.NextRunAt); err != nil {
		t.Fatal(err)
	}
	if n := materializeAt(t, db, now); n != 1 {
		t.Fatalf("25 s before the hour: %d runs, want the hourly job's", n)
	}
	if total, _ := countRuns(t, db, hourly.ID); total != 1 {
		t.Fatalf("hourly job: %d runs, want 1", total)
	}
}

// The materializer reads a herd by index, batch by batch, on statistics
// taken before the herd was inserted (a herd is a bulk insert): it walks
// job_schedules_early_idx and job_schedules_due_idx in order and probes
// jobs and job_schedules by key, and never reads or sorts the whole herd
// to take one batch of it.
func TestMaterializerReadsAHerdByIndex(t *testing.T) {
	db, ctx, _ := parallelJob(t, "0 0 1 1 *")
	if _, err := db.Pool.Exec(ctx, "ANALYZE jobs, job_schedules"); err != nil {
		t.Fatal(err)
	}
	now := dbNow(t, db)
	due := now.Add(20 * time.Second).Truncate(time.Second)
	if _, err := db.Pool.Exec(ctx, `
		WITH j AS (
			INSERT INTO jobs (name, cron_expr, target_url)
			SELECT 'herd-' || g, '0 0 1 1 *', 'http://127.0.0.1:9/' FROM generate_series(1, 20000) g
			RETURNING id)
		UPDATE job_schedules s SET next_run_at = $1, materialize_at = $2 FROM j WHERE s.job_id = j.id`,
		due, now.Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	batch := 2000
	ids := make([]int64, batch)
	nexts := make([]time.Time, batch)
	early := make([]*time.Time, batch)
	if err := db.Pool.QueryRow(ctx, "SELECT array_agg(job_id) FROM (SELECT job_id FROM job_schedules ORDER BY job_id LIMIT $1) s", batch).Scan(&ids); err != nil {
		t.Fatal(err)
	}
	for i := range nexts {
		nexts[i] = due.AddDate(1, 0, 0)
	}
	horizon := now.Add(2 * time.Second)
	for _, c := range []struct {
		name, stmt, want string
		args             []any
	}{
		{"early jobs", sql.EarlyJobsSQLForTest, "job_schedules_early_idx", []any{now, horizon, now.Add(sql.EarlyLookahead), batch}},
		{"due jobs", sql.DueJobsSQLForTest, "job_schedules_due_idx", []any{now, horizon, batch}},
		{"advance schedules", sql.AdvanceSchedulesSQLForTest, "job_schedules_pkey", []any{ids, nexts, early}},
	} {
		tx, err := db.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "SELECT "+sql.MaterializeSettingsForTest); err != nil {
			t.Fatal(err)
		}
		plan := explain(t, tx.Query, c.stmt, c.args...)
		_ = tx.Rollback(ctx)
		if !strings.Contains(plan, "Index Scan using "+c.want) || strings.Contains(plan, "Seq Scan") ||
			strings.Contains(plan, "Sort") || strings.Contains(plan, "Hash") {
			t.Fatalf("%s: want a walk of %s, no sequential scan, sort or hash:\n%s", c.name, c.want, plan)
		}
	}
}
