package sql_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// partitionedFrom is the first migration of the partitioned schema
// (019_partition_runs; 020 swaps).
const partitionedFrom = 19

// TestPartitionMigration upgrades a database holding runs and attempts to
// the partitioned schema while a worker claims, starts and completes runs
// and the API triggers new ones, and measures the longest any of those
// statements waited. Every run and attempt is kept, and the schema works
// afterwards.
//
// A few thousand runs by default; CHRONOS_PARTITION_MIGRATION_RUNS=2000000
// for the figure reported in the package doc (about a minute).
func TestPartitionMigration(t *testing.T) {
	t.Parallel()
	n := 3000
	if v := os.Getenv("CHRONOS_PARTITION_MIGRATION_RUNS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatalf("CHRONOS_PARTITION_MIGRATION_RUNS: %v", err)
		}
	}
	ctx := t.Context()
	dsn := sqltest.NewEmptyURL(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	sqltest.MigrateTo(t, ctx, conn, partitionedFrom-1)

	// History: n runs over the last n seconds, 90% succeeded, 5% dead,
	// 5% pending retries (due now: the worker below takes them), and a
	// failed attempt for every third run.
	start := time.Now()
	mustExec(t, conn, `INSERT INTO jobs (name, cron_expr, target_url, max_retries)
		SELECT 'job-' || g, '* * * * *', 'http://127.0.0.1:1/', 100 FROM generate_series(1, 100) g`)
	for done := 0; done < n; done += 500_000 {
		mustExec(t, conn, `
			INSERT INTO job_runs (job_id, scheduled_at, trigger, status, attempt_count, available_at, started_at, finished_at, last_error)
			SELECT 1 + g % 100, now() - g * interval '1 second', 'schedule',
			       CASE WHEN g % 20 = 0 THEN 'pending' WHEN g % 20 = 1 THEN 'dead' ELSE 'succeeded' END,
			       1, now(), now() - g * interval '1 second',
			       CASE WHEN g % 20 <> 0 THEN now() - g * interval '1 second' END, 'boom'
			  FROM generate_series($1::int + 1, least($1::int + 500000, $2::int)) g`, done, n)
	}
	mustExec(t, conn, `INSERT INTO run_attempts (run_id, attempt, worker_id, started_at, finished_at, error)
		SELECT id, 1, 'w', scheduled_at, scheduled_at, 'boom' FROM job_runs WHERE id % 3 = 0`)
	mustExec(t, conn, "ANALYZE job_runs, run_attempts")
	var runs0, attempts0 int64
	if err := conn.QueryRow(ctx, "SELECT (SELECT count(*) FROM job_runs), (SELECT count(*) FROM run_attempts)").Scan(&runs0, &attempts0); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d runs, %d attempts loaded in %v", runs0, attempts0, time.Since(start).Round(time.Millisecond))

	// The workload: a worker and a client, each statement timed.
	db := sqltest.Open(t, dsn, "migration-test")
	var (
		mu       sync.Mutex
		longest  time.Duration
		longestQ string
		ops      int
		slow     int // statements over 100 ms
	)
	timed := func(what string, f func() error) error {
		t0 := time.Now()
		err := f()
		d := time.Since(t0)
		mu.Lock()
		defer mu.Unlock()
		ops++
		if d > 100*time.Millisecond {
			slow++
		}
		if d > longest {
			longest, longestQ = d, what
		}
		return err
	}
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Go(func() { // the worker
		for wctx.Err() == nil {
			var claimed []sql.Claimed
			if err := timed("claim", func() (err error) { claimed, err = db.Claim(wctx, "w1", 10, time.Minute); return err }); err != nil {
				if wctx.Err() == nil {
					errs <- fmt.Errorf("claim: %w", err)
				}
				return
			}
			var outs []sql.Outcome
			for i, c := range claimed {
				if i%2 == 0 {
					if err := timed("start", func() error { return db.Start(wctx, c.Lease()) }); err != nil && wctx.Err() == nil {
						errs <- fmt.Errorf("start: %w", err)
						return
					}
				}
				outs = append(outs, sql.Outcome{Lease: c.Lease(), Success: i%3 != 0, StatusCode: 500, Error: "x",
					StartedAt: time.Now(), FinishedAt: time.Now(), RetryDelay: time.Millisecond, StartRecorded: i%2 == 0})
			}
			if err := timed("complete", func() error { _, err := db.Complete(wctx, outs); return err }); err != nil && wctx.Err() == nil {
				errs <- fmt.Errorf("complete: %w", err)
				return
			}
		}
	})
	wg.Go(func() { // the client
		for i := int64(0); wctx.Err() == nil; i++ {
			if err := timed("trigger", func() error { _, err := db.Trigger(wctx, 1+i%100); return err }); err != nil && wctx.Err() == nil {
				errs <- fmt.Errorf("trigger: %w", err)
				return
			}
		}
	})

	// Let the workload run a moment, then migrate under it.
	waitOps := func(k int) {
		deadline := time.Now().Add(30 * time.Second)
		for {
			mu.Lock()
			o := ops
			mu.Unlock()
			if o >= k || time.Now().After(deadline) {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// pg_locks, sampled: the longest stretch the migration's session held
	// ACCESS EXCLUSIVE on a run table. Stopped before the connection
	// closes, also when the test fails midway.
	var held time.Duration
	sampler := sqltest.Connect(t, ctx, dsn)
	sctx, stopSampler := context.WithCancel(ctx)
	var sg sync.WaitGroup
	sg.Go(func() { held = sampleExclusive(sctx, sampler, migrateApp) })
	defer func() { stopSampler(); sg.Wait() }()
	defer func() { stop(); wg.Wait() }() // the workload, likewise

	// The rest of the migrations as chronos migrate runs them: under the
	// runner's lock_timeout, a migration that timed out waiting for a
	// lock tried again (the workload may hold one at any moment).
	// And, as autovacuum may, a session holds SHARE UPDATE EXCLUSIVE on
	// jobs for a while as the migration starts: the swap recreates the
	// foreign key to jobs, which needs a lock that conflicts with it.
	waitOps(50)
	blocker := sqltest.Connect(t, ctx, dsn)
	mustExec(t, blocker, "BEGIN")
	mustExec(t, blocker, "LOCK TABLE jobs IN SHARE UPDATE EXCLUSIVE MODE")
	var bg sync.WaitGroup
	bg.Go(func() {
		_, _ = blocker.Exec(ctx, "SELECT pg_sleep(1.5)")
		_, _ = blocker.Exec(ctx, "COMMIT")
	})
	defer bg.Wait()
	var log migrationLog
	t0 := time.Now()
	if err := sql.MigrateFSForTest(ctx, dsn, sql.Migrations(), sql.MigrateOptions{Log: slog.New(&log)}); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	took := time.Since(t0)
	stopSampler()
	sg.Wait()
	notices, retries := log.result()
	mu.Lock()
	before := ops
	mu.Unlock()
	waitOps(before + 50)
	stop()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("migration of %d runs took %v (%d retries after a lock timeout); ACCESS EXCLUSIVE held for %v at most (pg_locks sampled); "+
		"%d statements of the workload meanwhile, %d over 100 ms, the longest a %s of %v; notices: %q",
		n, took.Round(time.Millisecond), retries, held.Round(time.Millisecond), ops, slow, longestQ, longest.Round(time.Millisecond), notices)
	// The design's bound is 1 s; checked wide, the figure is in the log.
	if longest > 5*time.Second {
		t.Errorf("a %s waited %v during the migration", longestQ, longest)
	}

	// Nothing lost: every run and attempt is there (the workload only
	// added), and the tables are partitioned.
	var runs1, attempts1, legacy int64
	var kind string
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM job_runs), (SELECT count(*) FROM run_attempts),
		(SELECT count(*) FROM job_runs_legacy), (SELECT relkind::text FROM pg_class WHERE oid = 'job_runs'::regclass)`).Scan(&runs1, &attempts1, &legacy, &kind); err != nil {
		t.Fatal(err)
	}
	if kind != "p" || runs1 < runs0 || attempts1 < attempts0 || legacy < runs0 {
		t.Fatalf("after: kind %s, %d runs (before %d), %d attempts (before %d), %d in the legacy partition",
			kind, runs1, runs0, attempts1, attempts0, legacy)
	}
	// The view of every attempt reads the partitioned tables.
	var viewed int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM run_attempts_all").Scan(&viewed); err != nil || viewed < attempts1 {
		t.Fatalf("run_attempts_all: %d rows of %d attempts (%v)", viewed, attempts1, err)
	}
	// One run per occurrence still holds across the partitioned table.
	_, err = conn.Exec(ctx, `INSERT INTO job_runs (job_id, scheduled_at, trigger)
		SELECT job_id, scheduled_at, 'schedule' FROM job_runs WHERE trigger = 'schedule' LIMIT 1`)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23505" {
		t.Fatalf("a second run for an occurrence: %v", err)
	}
	// The old foreign key of run_attempts is gone; job_runs.job_id's stays.
	var fks int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND confrelid = 'job_runs'::regclass`).Scan(&fks); err != nil || fks != 0 {
		t.Fatalf("%d foreign keys reference job_runs (%v)", fks, err)
	}
}

// migrateApp is the application_name of the migration runner's session.
const migrateApp = "chronos-migrate"

// migrationLog is a slog.Handler that keeps the migration runner's
// notices (the migration's own figure: how long the swap held its locks)
// and counts its retries.
type migrationLog struct {
	mu      sync.Mutex
	notices []string
	retries int
}

func (l *migrationLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *migrationLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *migrationLog) WithGroup(string) slog.Handler            { return l }

func (l *migrationLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.Level >= slog.LevelWarn {
		l.retries++
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "message" {
			l.notices = append(l.notices, a.Value.String())
		}
		return true
	})
	return nil
}

func (l *migrationLog) result() ([]string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.notices...), l.retries
}

// sampleExclusive polls pg_locks until ctx ends and returns the longest
// stretch during which a session of application app held ACCESS
// EXCLUSIVE on job_runs or run_attempts (or their legacy partitions).
func sampleExclusive(ctx context.Context, conn *pgx.Conn, app string) time.Duration {
	var longest time.Duration
	var since time.Time
	for ctx.Err() == nil {
		var held bool
		err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
			 JOIN pg_stat_activity a ON a.pid = l.pid
			 WHERE a.application_name = $1 AND l.granted AND l.mode = 'AccessExclusiveLock'
			   AND c.relname IN ('job_runs', 'run_attempts', 'job_runs_legacy', 'run_attempts_legacy'))`, app).Scan(&held)
		now := time.Now()
		switch {
		case err != nil:
			return longest
		case held && since.IsZero():
			since = now
		case !held && !since.IsZero():
			longest = max(longest, now.Sub(since))
			since = time.Time{}
		}
		time.Sleep(time.Millisecond)
	}
	return longest
}

func mustExec(t *testing.T, conn *pgx.Conn, q string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(t.Context(), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}
