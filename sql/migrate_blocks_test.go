package sql_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// migrationBlockRunsVar sets how many runs TestMigrationBlocks seeds.
const migrationBlockRunsVar = "CHRONOS_MIGRATION_BLOCK_RUNS"

// maxMigrationBlock is what no migration may make a write wait, at the
// default size: the runner's lock_timeout (1 s: a migration queued for a
// lock holds the writers queued behind it at most that long) plus a
// loaded machine's slack.
const maxMigrationBlock = 3 * time.Second

// writePace is how often each writer starts a write (when the previous one
// has ended).
const writePace = 5 * time.Millisecond

// TestMigrationBlocks measures how long each migration makes writes of
// job_runs wait (issue 23, item 2): a database at the first release's
// schema (migration 001) is seeded with runs (97% succeeded, 2% dead, 1%
// pending; attempts for every tenth run; jobs with every overlap policy),
// then every migration is applied, one at a time, through the runner
// (lock_timeout, retries, CONCURRENTLY outside a transaction), while two
// writers insert runs and update existing ones every few milliseconds. Reported
// per migration: how long it took, the longest any write waited during
// it, and the baseline (the longest write before the first migration).
//
// CHRONOS_MIGRATION_BLOCK_RUNS sets the size (default 20,000, a few
// seconds; the figures in docs/upgrading.md are at 2,000,000). At the
// default size no write may wait longer than maxMigrationBlock; at a
// larger one the figures are reported and the same bound applies.
func TestMigrationBlocks(t *testing.T) {
	t.Parallel()
	n := 20_000
	if v := os.Getenv(migrationBlockRunsVar); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1000 {
			t.Fatalf("%s=%q: want a number of runs, at least 1000", migrationBlockRunsVar, v)
		}
	}
	ctx := t.Context()
	dsn := sqltest.NewEmptyURL(t)
	files := migrationFiles(t)
	quiet := sql.MigrateOptions{Log: slog.New(slog.DiscardHandler)}
	if err := sql.MigrateFSForTest(ctx, dsn, upTo(files, 1), quiet); err != nil {
		t.Fatal(err)
	}
	conn := sqltest.Connect(t, ctx, dsn)
	seedStart := time.Now()
	seedRuns(t, conn, n)
	t.Logf("seeded %d runs at migration 1 in %s", n, time.Since(seedStart).Round(time.Millisecond))

	// The writers: exec mode, so no prepared statement outlives the DDL.
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	pool, err := pgxpool.New(ctx, dsn+sep+"default_query_exec_mode=exec&pool_max_conns=3&application_name="+blocksWriterApp)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	w := &blockWriters{pool: pool, maxID: int64(n)}
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { w.run(wctx, w.insert) })
	wg.Go(func() { w.run(wctx, w.update) })
	defer func() { stop(); wg.Wait() }()
	// What a slow write waits for: pg_stat_activity sampled.
	sampler := sqltest.Connect(t, ctx, dsn)
	waits := &waitSampler{}
	sctx, stopSampler := context.WithCancel(ctx)
	var sg sync.WaitGroup
	sg.Go(func() { waits.run(sctx, sampler) })
	defer func() { stopSampler(); sg.Wait() }()
	baseStart := time.Now()
	waitUntil(t, 30*time.Second, func() bool { n, _, _ := w.tally(); return n >= 200 })
	time.Sleep(time.Second)
	baseline := w.longest(baseStart, time.Now())

	type result struct {
		name       string
		took, wait time.Duration
		why        string
	}
	var results []result
	for v := 2; v <= len(files); v++ {
		var log retryLog
		t0 := time.Now()
		if err := sql.MigrateFSForTest(ctx, dsn, upTo(files, v), sql.MigrateOptions{Log: slog.New(&log)}); err != nil {
			t.Fatalf("migration %s: %v", files[v-1], err)
		}
		t1 := time.Now()
		// A write that started during the migration and ends after it
		// waited for it too: give the writers a moment to finish theirs.
		waitUntil(t, 30*time.Second, func() bool { return w.doneAfter(t1) })
		results = append(results, result{files[v-1], t1.Sub(t0), w.longest(t0, t1), waits.worst(t0, t1)})
		if log.n() > 0 {
			t.Logf("%s: %d lock timeout(s) retried", files[v-1], log.n())
		}
	}
	stop()
	wg.Wait()
	writes, deadlocks, err := w.tally()
	if err != nil {
		t.Errorf("a write failed: %v", err)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d runs; baseline longest write %s; %d writes, %d lost a deadlock (retried)\n",
		n, baseline.Round(time.Millisecond), writes, deadlocks)
	fmt.Fprintf(&sb, "%-36s %10s %14s  %s\n", "migration", "took", "longest write", "(the longest wait sampled: for what, behind what)")
	worst := result{}
	for _, r := range results {
		fmt.Fprintf(&sb, "%-36s %10s %14s  %s\n", r.name, r.took.Round(time.Millisecond), r.wait.Round(time.Millisecond), r.why)
		if r.wait > worst.wait {
			worst = r
		}
	}
	t.Log("writes of job_runs waiting on each migration:\n" + sb.String())
	if worst.wait > maxMigrationBlock {
		t.Errorf("%s made a write wait %s (bound %s)", worst.name, worst.wait.Round(time.Millisecond), maxMigrationBlock)
	}
	// A concurrent build that failed leaves an invalid index behind: none.
	var invalid string
	if err := conn.QueryRow(ctx, `SELECT coalesce(string_agg(indexrelid::regclass::text, ', '), '') FROM pg_index WHERE NOT indisvalid`).Scan(&invalid); err != nil || invalid != "" {
		t.Errorf("invalid indexes after the migrations: %q (%v)", invalid, err)
	}
	var left int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM job_runs").Scan(&left); err != nil || left < int64(n) {
		t.Fatalf("%d runs after the migrations (%v), want at least %d", left, err, n)
	}
}

// migrationFiles lists the embedded migrations in order.
func migrationFiles(t *testing.T) []string {
	t.Helper()
	ents, err := fs.ReadDir(sql.Migrations(), ".")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".sql") {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// upTo is the embedded migrations up to number v.
func upTo(files []string, v int) fs.FS {
	m := fstest.MapFS{}
	for _, f := range files[:v] {
		b, err := fs.ReadFile(sql.Migrations(), f)
		if err != nil {
			panic(err) // embedded: it is there
		}
		m[f] = &fstest.MapFile{Data: b}
	}
	return m
}

// seedRuns fills a database at migration 1: 1,000 jobs (a tenth skip,
// a tenth queue_one), n runs one minute apart per job, 97% succeeded,
// 2% dead, 1% pending; attempts for every tenth run; and a redrive
// (succeeded) for every tenth dead run.
func seedRuns(t *testing.T, conn *pgx.Conn, n int) {
	t.Helper()
	ctx := t.Context()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`INSERT INTO jobs (name, cron_expr, target_url, overlap)
		SELECT 'job-' || g, '* * * * *', 'http://127.0.0.1:1/',
		       CASE g % 10 WHEN 0 THEN 'skip' WHEN 1 THEN 'queue_one' ELSE 'allow' END
		  FROM generate_series(1, 1000) g`)
	const batch = 250_000
	base := time.Now().Truncate(time.Minute) // one for every batch: occurrences never collide
	for done := 0; done < n; done += batch {
		exec(`INSERT INTO job_runs (job_id, scheduled_at, trigger, status, attempt_count, available_at, started_at, finished_at, last_error)
			SELECT 1 + g % 1000, $4::timestamptz - (g / 1000) * interval '1 minute', 'schedule',
			       CASE WHEN g % 100 = 0 THEN 'pending' WHEN g % 100 IN (1, 2) THEN 'dead' ELSE 'succeeded' END,
			       1, now() + interval '1 day', now() - (g / 1000) * interval '1 minute',
			       CASE WHEN g % 100 <> 0 THEN now() - (g / 1000) * interval '1 minute' END,
			       CASE WHEN g % 100 IN (1, 2) THEN 'boom' END
			  FROM generate_series($1::int + 1, least($1::int + $3::int, $2::int)) g`, done, n, batch, base)
	}
	exec(`INSERT INTO job_runs (job_id, scheduled_at, trigger, redrive_of, status, attempt_count, finished_at)
		SELECT job_id, scheduled_at, 'redrive', id, 'succeeded', 1, now() FROM job_runs WHERE status = 'dead' AND id % 10 = 1`)
	exec(`INSERT INTO run_attempts (run_id, attempt, worker_id, started_at, finished_at, status_code)
		SELECT id, 1, 'w', scheduled_at, scheduled_at, 200 FROM job_runs WHERE id % 10 = 0`)
	exec("VACUUM ANALYZE jobs, job_runs, run_attempts")
}

// blockWriters insert and update runs, a write every writePace each, timed.
type blockWriters struct {
	pool  *pgxpool.Pool
	maxID int64

	mu        sync.Mutex
	writes    []timedWrite
	err       error
	deadlocks int
}

type timedWrite struct{ start, end time.Time }

func (w *blockWriters) insert(ctx context.Context) error {
	_, err := w.pool.Exec(ctx, `INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at)
		VALUES ($1, now(), 'manual', now() + interval '1 day')`, 1+rand.Int64N(1000))
	return err
}

func (w *blockWriters) update(ctx context.Context) error {
	_, err := w.pool.Exec(ctx, `UPDATE job_runs SET attempt_count = attempt_count + 1 WHERE id = $1`, 1+rand.Int64N(w.maxID))
	return err
}

func (w *blockWriters) run(ctx context.Context, write func(context.Context) error) {
	// Paced: a write every few milliseconds finds any lock a migration
	// holds for longer (maxMigrationBlock is seconds), and two writers
	// without pause kept two backends busy for the whole test, which cost
	// a loaded make test more than the check needs.
	pace := time.NewTicker(writePace)
	defer pace.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
			return
		case <-pace.C:
		}
		t0 := time.Now()
		err := write(ctx)
		t1 := time.Now()
		w.mu.Lock()
		var pgErr *pgconn.PgError
		switch {
		case err == nil || ctx.Err() != nil:
		case errors.As(err, &pgErr) && pgErr.Code == "40P01":
			w.deadlocks++ // retried, as the reactor does
		case w.err == nil:
			w.err = err
		}
		w.writes = append(w.writes, timedWrite{t0, t1})
		w.mu.Unlock()
	}
}

// tally is what the writers did so far: the writes, the deadlocks lost
// (retried) and the first error.
func (w *blockWriters) tally() (writes, deadlocks int, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.writes), w.deadlocks, w.err
}

// longest is the longest write that overlapped [from, to].
func (w *blockWriters) longest(from, to time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var d time.Duration
	for _, x := range w.writes {
		if x.end.After(from) && x.start.Before(to) {
			d = max(d, x.end.Sub(x.start))
		}
	}
	return d
}

// doneAfter tells whether each writer finished a write that started
// after at (so every write in flight at `at` has ended).
func (w *blockWriters) doneAfter(at time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := 0
	for i := len(w.writes) - 1; i >= 0 && w.writes[i].start.After(at); i-- {
		k++
	}
	return k >= 2
}

// retryLog counts the runner's retries (its warnings).
type retryLog struct {
	mu sync.Mutex
	k  int
}

func (l *retryLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *retryLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *retryLog) WithGroup(string) slog.Handler            { return l }
func (l *retryLog) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		l.mu.Lock()
		l.k++
		l.mu.Unlock()
	}
	return nil
}

func (l *retryLog) n() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.k
}

// waitUntil polls cond until it holds, failing after within.
func waitUntil(t *testing.T, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// blocksWriterApp is the writers' application_name, for the sampler.
const blocksWriterApp = "blocks-writer"

// waitSampler samples, every 20 ms, the writers' statements running for
// over 100 ms: what they wait for and the statements blocking them.
type waitSampler struct {
	mu      sync.Mutex
	samples []waitSample
}

type waitSample struct {
	at   time.Time
	dur  time.Duration
	what string
}

func (s *waitSampler) run(ctx context.Context, conn *pgx.Conn) {
	for ctx.Err() == nil {
		rows, err := conn.Query(ctx, `
			SELECT extract(epoch FROM clock_timestamp() - a.query_start)::float8,
			       left(regexp_replace(a.query, '\s+', ' ', 'g'), 40) || ': ' ||
			       coalesce(a.wait_event_type || ':' || a.wait_event, 'cpu') || ' behind ' ||
			       coalesce((SELECT string_agg(left(regexp_replace(b.query, '\s+', ' ', 'g'), 80), ' | ')
			                   FROM pg_stat_activity b WHERE b.pid = ANY (pg_blocking_pids(a.pid))), 'nothing')
			  FROM pg_stat_activity a
			 WHERE a.application_name = $1 AND a.state = 'active' AND clock_timestamp() - a.query_start > interval '100 ms'`, blocksWriterApp)
		if err == nil {
			now := time.Now()
			for rows.Next() {
				var secs float64
				var what string
				if rows.Scan(&secs, &what) == nil {
					s.mu.Lock()
					s.samples = append(s.samples, waitSample{now, time.Duration(secs * float64(time.Second)), what})
					s.mu.Unlock()
				}
			}
			rows.Close()
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// worst describes the longest wait sampled in [from, to]: the longest
// sample of a statement waiting for a lock if there is one (the last
// sample of a wait may catch the statement just woken, on the CPU).
func (s *waitSampler) worst(from, to time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var w, locked waitSample
	for _, x := range s.samples {
		if x.at.Before(from) || x.at.After(to) {
			continue
		}
		if x.dur > w.dur {
			w = x
		}
		if strings.Contains(x.what, ": Lock:") && x.dur > locked.dur {
			locked = x
		}
	}
	if locked.what != "" {
		w = locked
	}
	if w.what == "" {
		return ""
	}
	return fmt.Sprintf("%s: %s", w.dur.Round(time.Millisecond), w.what)
}
