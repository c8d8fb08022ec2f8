package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/reactor/reactortest"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
	"github.com/chronoshq/chronos/ui"
)

// TestConsoleAtScale measures the server time of every console page (the
// handler, from request to rendered body, timed in-process: no network, no
// browser) with 1,000,000 jobs and 10,000,000 runs in the database, and
// reports each page's median, p90 and size. It is a measurement, not a
// check, and seeding takes minutes, so it runs only when asked:
//
//	CHRONOS_CONSOLE_SCALE=1 CHRONOS_TESTDB=local bash scripts/testdb.sh \
//	    go test -count=1 -timeout 2h -run '^TestConsoleAtScale$' -v ./ui/
//
// CHRONOS_CONSOLE_SCALE_JOBS and CHRONOS_CONSOLE_SCALE_RUNS change the
// sizes, CHRONOS_CONSOLE_SCALE_ROUNDS the rounds per page (25), and
// CHRONOS_CONSOLE_SCALE_PAGES keeps the pages whose path contains it. CHRONOS_CONSOLE_SCALE_DB names a database (a DSN) to use instead
// of a fresh one: it is migrated, seeded when it has no jobs, and kept, so
// a second run (after changing a query) measures at once.
//
// The data: jobs as in sql's BenchmarkJobSearch (names job-<n>, team, env
// and shard labels, descriptions), one in ten paused; runs spread evenly
// over the last 7 days (about 1,000 a minute at 10,000,000, so the
// overview's last hour holds ~60,000), ten per job, 2% dead, 2% manual and
// 0.5% redrives, the newest 1,000 pending; an attempt for each dead run;
// a create in the history of every job and 500 more entries for job 1.
func TestConsoleAtScale(t *testing.T) {
	if os.Getenv("CHRONOS_CONSOLE_SCALE") == "" {
		t.Skip("a measurement that seeds millions of rows: set CHRONOS_CONSOLE_SCALE=1 to run it")
	}
	jobs, runs := envInt("CHRONOS_CONSOLE_SCALE_JOBS", 1_000_000), envInt("CHRONOS_CONSOLE_SCALE_RUNS", 10_000_000)
	ctx := context.Background()
	dsn := os.Getenv("CHRONOS_CONSOLE_SCALE_DB")
	if dsn == "" {
		dsn = sqltest.NewURL(t)
	} else if err := sql.Migrate(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	in := reactortest.NewInstance(t, dsn, "scale")
	var n int64
	if err := in.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM jobs LIMIT 1) j`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		seedScale(t, in.DB, jobs, runs)
	}
	c := ui.New(ui.Config{Instance: in.Name, APIKeys: testKeys}, in.DB, in.Bus, in.Log)
	defer c.Close()
	h := c.Handler()
	cookie := signInDirect(t, h)

	// Ids and cursors the pages need, read from the data.
	var deadRun, deadJob, manyRunsJob, midRunID int64
	var midCreated time.Time
	q := func(sql string, dst ...any) {
		t.Helper()
		if err := in.DB.Pool.QueryRow(ctx, sql).Scan(dst...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	q(`SELECT id, job_id FROM job_runs WHERE status = 'dead' ORDER BY id DESC LIMIT 1`, &deadRun, &deadJob)
	q(`SELECT max(id) / 2 FROM job_runs`, &midRunID)
	q(`SELECT created_at FROM job_runs WHERE id >= `+strconv.FormatInt(midRunID, 10)+` ORDER BY id LIMIT 1`, &midCreated)
	manyRunsJob = 1
	_, midRuns, err := in.DB.AllRuns(ctx, sql.RunQuery{Status: chronos.StatusDead, Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	_, midJobs, err := in.DB.Jobs(ctx, sql.JobFilter{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	since, until := midCreated.Add(-30*time.Minute).UTC().Format("2006-01-02T15:04:05"), midCreated.Add(30*time.Minute).UTC().Format("2006-01-02T15:04:05")
	id := func(n int64) string { return strconv.FormatInt(n, 10) }
	// The overview keeps the minutes that have settled: its first request
	// on an instance reads the whole hour ("cold": a new console each
	// round), later ones the last few minutes.
	pages := []string{
		"/ui/ (cold)",
		"/ui/",
		"/ui/jobs",
		"/ui/jobs?cursor=" + url.QueryEscape(midJobs),
		"/ui/jobs?enabled=false",
		"/ui/jobs?name_prefix=job-77777",
		"/ui/jobs?name_prefix=job-1",
		"/ui/jobs?q=zanzibar",
		"/ui/jobs?q=team-42",
		"/ui/jobs?label=env%3Dprod",
		"/ui/jobs?label=shard%3Ds4242",
		"/ui/jobs?label=team%3Dteam-7+env%3Ddev",
		"/ui/jobs?name_prefix=job-1&q=team-1&label=env%3Dstaging&enabled=true",
		"/ui/jobs/" + id(manyRunsJob),
		"/ui/jobs/" + id(deadJob) + "?status=dead",
		"/ui/jobs/" + id(manyRunsJob) + "/edit",
		"/ui/jobs/new",
		"/ui/jobs/" + id(manyRunsJob) + "/delete",
		"/ui/schedule/preview?kind=cron&cron_expr=*%2F5+*+*+*+*&timezone=Europe%2FBerlin&job=" + id(manyRunsJob),
		"/ui/schedule/preview?kind=cron&cron_expr=61+*+*+*+*&timezone=UTC",
		"/ui/runs/" + id(deadRun),
		"/ui/runs",
		"/ui/runs?cursor=" + url.QueryEscape(midRuns),
		"/ui/runs?job_id=" + id(deadJob),
		"/ui/runs?trigger=manual",
		"/ui/runs?trigger=redrive",
		"/ui/runs?since=" + since + "&until=" + until,
		"/ui/runs?until=" + since,
		"/ui/runs?status=any",
		"/ui/runs?status=any&since=" + since + "&until=" + until,
		"/ui/runs?status=pending",
		"/ui/runs?status=succeeded&trigger=redrive",
		"/ui/runs?status=any&job_id=" + id(deadJob),
		"/ui/live",
	}
	if only := os.Getenv("CHRONOS_CONSOLE_SCALE_PAGES"); only != "" {
		pages = slices.DeleteFunc(pages, func(p string) bool { return !strings.Contains(p, only) })
	}
	rounds := envInt("CHRONOS_CONSOLE_SCALE_ROUNDS", 25)
	var report strings.Builder
	fmt.Fprintf(&report, "console pages at %d jobs, %d runs (%d rounds each, in-process):\n%-100s %9s %9s %9s %8s\n",
		jobs, runs, rounds, "page", "median", "p90", "max", "bytes")
	for _, p := range pages {
		var times []time.Duration
		size := 0
		for i := range rounds + 2 {
			path, hh := p, h
			if cold, ok := strings.CutSuffix(p, " (cold)"); ok {
				fresh := ui.New(ui.Config{Instance: in.Name, APIKeys: testKeys}, in.DB, in.Bus, in.Log)
				path, hh = cold, fresh.Handler()
				fresh.Close()
			}
			req := httptest.NewRequest("GET", path, nil)
			req.AddCookie(cookie)
			rec := httptest.NewRecorder()
			start := time.Now()
			hh.ServeHTTP(rec, req)
			d := time.Since(start)
			if rec.Code != http.StatusOK {
				t.Fatalf("GET %s: %d\n%s", p, rec.Code, rec.Body.String())
			}
			size = rec.Body.Len()
			if i >= 2 { // two warm-up rounds: plans cached, pages in memory
				times = append(times, d)
			}
		}
		slices.Sort(times)
		fmt.Fprintf(&report, "%-100s %9s %9s %9s %8d\n", p, ms(times[len(times)/2]), ms(times[len(times)*9/10]), ms(times[len(times)-1]), size)
	}
	t.Log(report.String())
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 2, 64) + "ms"
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// signInDirect signs in as the writer through h and returns the cookie.
func signInDirect(t *testing.T, h http.Handler) *http.Cookie {
	t.Helper()
	req := httptest.NewRequest("POST", "/ui/login", strings.NewReader(url.Values{"key": {writeKey}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	for _, ck := range rec.Result().Cookies() {
		if ck.Name == "chronos_session" {
			return ck
		}
	}
	t.Fatalf("sign in: %d, no session cookie", rec.Code)
	return nil
}

// seedScale fills a fresh database with jobs and runs (see
// TestConsoleAtScale). The secondary indexes of job_runs are dropped for
// the load and built again after it, from their own definitions, which is
// many times faster than maintaining them row by row; triggers (NOTIFY)
// are off for the load's session.
func seedScale(t *testing.T, db *sql.DB, jobs, runs int) {
	ctx := context.Background()
	start := time.Now()
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	exec := func(what, q string, args ...any) {
		t.Helper()
		s := time.Now()
		if _, err := conn.Exec(ctx, q, args...); err != nil {
			t.Fatalf("seed: %s: %v", what, err)
		}
		t.Logf("seed: %s in %v", what, time.Since(s).Round(time.Millisecond))
	}
	exec("settings", `SET session_replication_role = replica; SET synchronous_commit = off; SET maintenance_work_mem = '512MB'`)
	rows, err := conn.Query(ctx, `SELECT indexname, indexdef FROM pg_indexes
	   WHERE schemaname = current_schema() AND tablename = 'job_runs' AND indexname <> 'job_runs_pkey'`)
	if err != nil {
		t.Fatal(err)
	}
	var names, defs []string
	for rows.Next() {
		var n, d string
		if err := rows.Scan(&n, &d); err != nil {
			t.Fatal(err)
		}
		names, defs = append(names, n), append(defs, d)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		exec("drop "+n, `DROP INDEX `+n)
	}
	exec("jobs", `
		INSERT INTO jobs (name, description, labels, cron_expr, timezone, target_url, enabled, next_run_at, created_at, updated_at)
		SELECT 'job-' || g,
		       'Settles batch ' || g || ' for team-' || (g % 100) || CASE WHEN g % 100000 = 7 THEN ' zanzibar' ELSE '' END,
		       jsonb_build_object('team', 'team-' || (g % 100), 'env', (ARRAY['prod','staging','dev'])[g % 3 + 1],
		                          'shard', 's' || (g % 10000)),
		       '*/5 * * * *', (ARRAY['UTC','Europe/Berlin','America/New_York','Asia/Tokyo'])[g % 4 + 1],
		       'http://127.0.0.1:9/hook/' || g, g % 10 <> 0,
		       CASE WHEN g % 10 <> 0 THEN date_trunc('hour', now()) + interval '1 hour' END,
		       now() - interval '30 days', now() - interval '30 days'
		  FROM generate_series(1, $1::int) g`, jobs)
	// Run i belongs to job i % jobs + 1 and was created at an even step
	// over the last 7 days, in id order; a scheduled run's instant is
	// its creation, unique per job.
	exec("runs", `
		INSERT INTO job_runs (id, job_id, scheduled_at, trigger, redrive_of, status, attempt_count, available_at,
		                      leased_by, leased_until, started_at, finished_at, last_error, last_status_code, created_at)
		OVERRIDING SYSTEM VALUE
		SELECT i, i % $2::int + 1, c, tr,
		       CASE WHEN tr = 'redrive' THEN greatest(i - 1000, 1) END,
		       st, CASE st WHEN 'dead' THEN 4 WHEN 'pending' THEN 0 ELSE 1 END,
		       c, CASE WHEN st = 'running' THEN 'scale-worker' END, CASE WHEN st = 'running' THEN now() + interval '1 minute' END,
		       CASE WHEN st <> 'pending' THEN c + (i % 40) * interval '1 millisecond' END,
		       CASE WHEN st IN ('succeeded', 'dead') THEN c + (i % 40 + 100) * interval '1 millisecond' END,
		       CASE WHEN st = 'dead' THEN 'HTTP 500 from the target' END,
		       CASE st WHEN 'dead' THEN 500 WHEN 'succeeded' THEN 200 END,
		       c
		  FROM (SELECT i, now() - interval '7 days' + (i::float8 / $1::bigint) * interval '7 days' AS c,
		               CASE WHEN i > $1::bigint - 1000 THEN 'pending' WHEN i > $1::bigint - 1050 THEN 'running'
		                    WHEN abs(hashint8(i)) % 100 < 2 THEN 'dead' ELSE 'succeeded' END AS st,
		               CASE WHEN i % 50 = 7 THEN 'manual' WHEN i % 200 = 13 THEN 'redrive' ELSE 'schedule' END AS tr
		          FROM generate_series(1, $1::bigint) i) r`, runs, jobs)
	exec("identity", `SELECT setval(pg_get_serial_sequence('job_runs', 'id'), $1::bigint)`, runs)
	exec("attempts of the dead runs", `
		INSERT INTO run_attempts (run_id, attempt, worker_id, started_at, finished_at, status_code, error, response_body, duration_ms)
		SELECT id, 1, 'scale-worker', started_at, finished_at, 500, 'HTTP 500', '{"error": "upstream timed out"}', 100
		  FROM job_runs WHERE status = 'dead'`)
	exec("history", `
		INSERT INTO job_audit (job_id, action, actor, at, changes)
		SELECT id, 'create', 'deploy-bot', created_at, '{"name": {"after": "x"}}' FROM jobs;
		INSERT INTO job_audit (job_id, action, actor, changes)
		SELECT 1, CASE WHEN g % 2 = 0 THEN 'pause' ELSE 'resume' END, 'oncall',
		       jsonb_build_object('enabled', jsonb_build_object('before', g % 2 = 1, 'after', g % 2 = 0))
		  FROM generate_series(1, 500) g`)
	for i, d := range defs {
		exec("index "+names[i], d)
	}
	exec("settings back", `RESET session_replication_role; RESET synchronous_commit; RESET maintenance_work_mem`)
	exec("vacuum analyze", `VACUUM ANALYZE`)
	t.Logf("seeded %d jobs and %d runs in %v", jobs, runs, time.Since(start).Round(time.Second))
}
