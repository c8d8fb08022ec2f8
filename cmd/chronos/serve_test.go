package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	nethttp "net/http"
	"net/url"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

const testKey = "test-key"

// testClient keeps no idle connections, so none outlives a test (goleak).
var testClient = &nethttp.Client{Timeout: 10 * time.Second, Transport: &nethttp.Transport{DisableKeepAlives: true}}

// TestServeDeliversToReceive runs the real binary: `serve` against a fresh
// database and `receive` as the target; a triggered job and a cron job
// are both delivered, signed, and SIGTERM stops serve with exit 0 and no
// run left leased.
func TestServeDeliversToReceive(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	dsn := sqltest.NewURL(t)
	const secret = "test-secret"

	recv := startProc(t, "receive", bin, cleanEnv(), "receive", "--addr", "127.0.0.1:0", "--secret", secret)
	recvURL := recv.stderr.wait(t, `listening on (http://\S+)`, 10*time.Second)[1]

	srv := startProc(t, "serve", bin, cleanEnv(
		"DATABASE_URL="+dsn,
		"HTTP_ADDR=127.0.0.1:0",
		"API_KEYS="+testKey,
		"SIGNING_SECRET="+secret,
		"ALLOW_PRIVATE_TARGETS=true",
		"LOG_FORMAT=json",
		"INSTANCE_ID=serve-test",
		"SHUTDOWN_TIMEOUT=5s",
		"IDLE_POLL_INTERVAL=500ms",
	), "serve")
	addr := srv.stderr.wait(t, `"msg":"chronos started".*"addr":"([^"]+)"`, 30*time.Second)[1]
	base := "http://" + addr
	waitReady(t, base)

	// A manual trigger of a one-shot job far in the future.
	job := createJob(t, base, map[string]any{
		"name": "triggered", "run_at": "2099-01-01T00:00:00Z",
		"target_url": recvURL + "/trigger", "payload": map[string]any{"hello": "world"},
		"max_retries": 0,
	})
	var run struct {
		ID int64 `json:"id"`
	}
	call(t, "POST", fmt.Sprintf("%s/v1/jobs/%d/trigger", base, job), nil, &run, 202, 201, 200)
	recv.stdout.wait(t, fmt.Sprintf(`^\S+ POST /trigger run=%d attempt=1 scheduled=\S+ lag=\S+ sig=ok -> 200 body=\{"hello":"world"\}$`, run.ID), 20*time.Second)
	waitRunStatus(t, base, run.ID, "succeeded")

	// A seconds-level cron job goes through the leader's materializer.
	createJob(t, base, map[string]any{
		"name": "every-second", "cron_expr": "* * * * * *",
		"target_url": recvURL + "/cron", "max_retries": 0,
	})
	recv.stdout.wait(t, `^\S+ POST /cron run=\d+ attempt=1 scheduled=\S+ lag=\S+ sig=ok -> 200 body=`, 20*time.Second)

	// The console is served beside the API, and an open console event
	// stream does not hold up the graceful shutdown.
	stream := openConsoleStream(t, base)
	defer stream.Close()

	if code := srv.stop(syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM, want 0", code)
	}
	srv.stderr.wait(t, `"msg":"chronos stopped"`, 10*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db, err := sql.Open(ctx, dsn, "serve-test-check")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var leased int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM job_runs WHERE status IN ('leased', 'running')`).Scan(&leased); err != nil {
		t.Fatal(err)
	}
	if leased != 0 {
		t.Errorf("%d runs left leased or running after a graceful shutdown", leased)
	}
	if code := recv.stop(syscall.SIGTERM, 10*time.Second); code != 0 {
		t.Errorf("receive exited %d after SIGTERM, want 0", code)
	}
}

// TestServeBadConfigStopsStartup: a bad value stops startup with one line
// naming the variable and a non-zero exit, before anything is served.
func TestServeBadConfigStopsStartup(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	base := []string{"API_KEYS=" + testKey, "HTTP_ADDR=127.0.0.1:0", "LOG_FORMAT=json"}
	for _, tc := range []struct {
		name string
		env  []string
		code int
		want string // regexp the stderr must match
	}{
		{"bad WORKER_CONCURRENCY", []string{"DATABASE_URL=" + goodDSN, "WORKER_CONCURRENCY=abc"}, 2,
			`(?m)^chronos: invalid WORKER_CONCURRENCY "abc": must be a positive integer$`},
		{"unparseable DATABASE_URL", []string{"DATABASE_URL=postgres://chronos:hunter2@localhost:notaport/chronos"}, 2,
			`(?m)^chronos: invalid DATABASE_URL: `},
		{"missing DATABASE_URL", nil, 2, `(?m)^chronos: DATABASE_URL is required`},
		{"unreachable DATABASE_URL", []string{"DATABASE_URL=postgres://chronos:hunter2@127.0.0.1:1/chronos?sslmode=disable", "DATABASE_CONNECT_TIMEOUT=1s"}, 1,
			`(?m)^chronos: cannot reach DATABASE_URL within 1s \(DATABASE_CONNECT_TIMEOUT\): .*127\.0\.0\.1`},
		{"no API keys", []string{"DATABASE_URL=" + goodDSN, "API_KEYS="}, 2, `(?m)^chronos: API_KEYS is empty`},
		{"bad REACTOR_SYNCHRONOUS_COMMIT", []string{"DATABASE_URL=" + goodDSN, "REACTOR_SYNCHRONOUS_COMMIT=async"}, 2,
			`(?m)^chronos: invalid REACTOR_SYNCHRONOUS_COMMIT "async": must be on or off$`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := execCommand(ctx, bin, cleanEnv(append(base, tc.env...)...), "serve")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("serve did not stop: %s", stderr.String())
			}
			if err == nil || cmd.ProcessState.ExitCode() != tc.code {
				t.Fatalf("exit %d (%v), want %d; stderr:\n%s", cmd.ProcessState.ExitCode(), err, tc.code, stderr.String())
			}
			if !regexp.MustCompile(tc.want).MatchString(stderr.String()) {
				t.Errorf("stderr does not match %q:\n%s", tc.want, stderr.String())
			}
			if strings.Contains(stderr.String(), "hunter2") {
				t.Errorf("stderr shows the database password:\n%s", stderr.String())
			}
		})
	}
}

// waitReady polls /readyz until the instance is ready.
// withRuntimeParam sets a server parameter (sent at connection start) in
// a URL DSN, replacing one the DSN already sets.
func withRuntimeParam(dsn, name, value string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		panic(err)
	}
	q := u.Query()
	q.Set(name, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// TestReactorPool: REACTOR_SYNCHRONOUS_COMMIT=off gives the reactor a pool
// of its own whose statements and transactions run with
// synchronous_commit=off, set for each of them (never for the session,
// which a transaction pooler would hand on to other clients), and leaves
// the API's pool as DATABASE_URL has it; on shares the API's pool.
func TestReactorPool(t *testing.T) {
	t.Parallel()
	// The API's sessions ask for on, whatever the test server's default
	// (a throwaway test cluster runs with off): the reactor's must still
	// get off.
	dsn := withRuntimeParam(sqltest.NewURL(t), "synchronous_commit", "on")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log := slog.New(slog.DiscardHandler)
	show := func(db *sql.DB) string {
		t.Helper()
		var v string
		if err := db.Pool.QueryRow(ctx, "SHOW synchronous_commit").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	plain, err := sql.Open(ctx, dsn, "plain")
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	apiWant := show(plain)
	if apiWant != "on" {
		t.Fatalf("a session on %s has synchronous_commit=%s", dsn, apiWant)
	}

	for _, mode := range []string{"on", "off"} {
		cfg, err := loadServeConfig(mapEnv(map[string]string{"DATABASE_URL": dsn, "API_KEYS": "k", "INSTANCE_ID": "pool-" + mode, "REACTOR_SYNCHRONOUS_COMMIT": mode}))
		if err != nil {
			t.Fatal(err)
		}
		db, err := connectDB(ctx, cfg, log)
		if err != nil {
			t.Fatal(err)
		}
		rdb, err := reactorPool(ctx, cfg, db, log)
		if err != nil {
			db.Close()
			t.Fatal(err)
		}
		if shared := rdb == db; shared != (mode == "on") {
			t.Errorf("REACTOR_SYNCHRONOUS_COMMIT=%s: reactor shares the API's pool: %v", mode, shared)
		}
		if got := show(db); got != apiWant {
			t.Errorf("REACTOR_SYNCHRONOUS_COMMIT=%s: the API's pool has synchronous_commit=%s, want DATABASE_URL's %s", mode, got, apiWant)
		}
		if want := map[string]string{"on": apiWant, "off": "off"}[mode]; show(rdb) != want {
			t.Errorf("REACTOR_SYNCHRONOUS_COMMIT=%s: the reactor's pool has synchronous_commit=%s, want %s", mode, show(rdb), want)
		}
		// In a transaction too; and the sessions themselves keep
		// DATABASE_URL's setting.
		tx, err := rdb.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var inTx, session string
		if err := tx.QueryRow(ctx, "SHOW synchronous_commit").Scan(&inTx); err != nil {
			t.Fatal(err)
		}
		tx.Rollback(ctx)
		if want := map[string]string{"on": apiWant, "off": "off"}[mode]; inTx != want {
			t.Errorf("REACTOR_SYNCHRONOUS_COMMIT=%s: a reactor transaction has synchronous_commit=%s, want %s", mode, inTx, want)
		}
		if err := rdb.Pool.Pool.QueryRow(ctx, "SHOW synchronous_commit").Scan(&session); err != nil {
			t.Fatal(err)
		}
		if session != apiWant {
			t.Errorf("REACTOR_SYNCHRONOUS_COMMIT=%s: the reactor's sessions have synchronous_commit=%s, want DATABASE_URL's %s", mode, session, apiWant)
		}
		if rdb != db {
			rdb.Close()
		}
		db.Close()
	}
}

func waitReady(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := testClient.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/readyz not ready within 20s (last: %v)", base, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// createJob creates a job and returns its id.
func createJob(t *testing.T, base string, body map[string]any) int64 {
	t.Helper()
	var job struct {
		ID int64 `json:"id"`
	}
	call(t, "POST", base+"/v1/jobs", body, &job, 201)
	return job.ID
}

// waitRunStatus polls a run until it has the given status.
func waitRunStatus(t *testing.T, base string, id int64, status string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var run struct {
			Status string `json:"status"`
		}
		call(t, "GET", fmt.Sprintf("%s/v1/runs/%d", base, id), nil, &run, 200)
		if run.Status == status {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %d is %s after 20s, want %s", id, run.Status, status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// call sends an authenticated JSON request, checks the status is one of
// want and decodes the response into out.
func call(t *testing.T, method, url string, body, out any, want ...int) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := nethttp.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	ok := false
	for _, w := range want {
		ok = ok || resp.StatusCode == w
	}
	if !ok {
		t.Fatalf("%s %s: %d %s, want %v", method, url, resp.StatusCode, b, want)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: decode %s: %v", method, url, b, err)
		}
	}
}

// openConsoleStream checks that serve mounts the web console at /ui/ next
// to the API, signs in, and returns the body of an open console event
// stream.
func openConsoleStream(t *testing.T, base string) io.ReadCloser {
	t.Helper()
	noRedirect := &nethttp.Client{Timeout: 10 * time.Second, Transport: &nethttp.Transport{DisableKeepAlives: true},
		CheckRedirect: func(*nethttp.Request, []*nethttp.Request) error { return nethttp.ErrUseLastResponse }}
	for path, want := range map[string]int{"/ui": 301, "/ui/login": 200, "/ui/jobs": 303, "/ui/static/htmx.min.js": 200, "/v1/jobs": 401} {
		resp, err := noRedirect.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	resp, err := noRedirect.PostForm(base+"/ui/login", map[string][]string{"key": {testKey}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 303 || len(resp.Cookies()) != 1 {
		t.Fatalf("console sign-in: %d with %d cookies, want 303 and a session cookie", resp.StatusCode, len(resp.Cookies()))
	}
	req, _ := nethttp.NewRequest("GET", base+"/ui/events", nil)
	req.AddCookie(resp.Cookies()[0])
	stream, err := (&nethttp.Client{Transport: &nethttp.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, 8)
	if stream.StatusCode != 200 {
		t.Fatalf("console event stream: %d", stream.StatusCode)
	}
	if _, err := io.ReadFull(stream.Body, first); err != nil || string(first) != ": chrono" {
		t.Fatalf("console event stream opened with %q, %v", first, err)
	}
	return stream.Body
}
