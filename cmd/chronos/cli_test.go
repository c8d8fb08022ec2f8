package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/internal/apiserver"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

const cliKey = "cli-test-key-4242"

// apiEnv serves the real API (router, auth, sql layer) on a fresh database
// and returns the environment that points the CLI at it.
func apiEnv(t *testing.T) map[string]string {
	t.Helper()
	return apiEnvOn(t, sqltest.New(t))
}

// parallelAPIEnv opens most CLI tests: the test runs in parallel with
// the others, the CLI pointed at an API of its own (apiEnv).
func parallelAPIEnv(t *testing.T) map[string]string {
	t.Helper()
	t.Parallel()
	return apiEnv(t)
}

// apiEnvOn is apiEnv on db, for a test that also writes to it directly.
func apiEnvOn(t *testing.T, db *sql.DB) map[string]string {
	t.Helper()
	ts := apiserver.Start(t, db, "cli-test", cliKey)
	return map[string]string{"CHRONOS_URL": ts.URL, "CHRONOS_API_KEY": cliKey}
}

// cli runs the CLI in-process with stdin and returns exit code, stdout, stderr.
func cli(t *testing.T, env map[string]string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &environ{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, getenv: func(k string) string { return env[k] }}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := runMain(ctx, args, e)
	return code, out.String(), errb.String()
}

// ok runs the CLI and fails the test unless it exits 0.
func ok(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	code, out, errOut := cli(t, env, "", args...)
	if code != 0 {
		t.Fatalf("chronos %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

func TestCLIJobsAndRuns(t *testing.T) {
	env := parallelAPIEnv(t)
	out := ok(t, env, "jobs", "create", "--name", "nightly-report", "--cron", "0 3 * * *", "--timezone", "Europe/Berlin",
		"--target", "http://127.0.0.1:9/report", "--payload", `{"report":"daily"}`, "--header", "X-Env=prod")
	if !strings.Contains(out, "nightly-report") || !strings.Contains(out, "0 3 * * *") || !strings.Contains(out, "Europe/Berlin") {
		t.Fatalf("create table:\n%s", out)
	}
	var j chronos.Job
	if err := json.Unmarshal([]byte(ok(t, env, "jobs", "get", "nightly-report", "-o", "json")), &j); err != nil || j.ID == 0 || j.Headers["X-Env"] != "prod" {
		t.Fatalf("get -o json: %+v, %v", j, err)
	}
	if out := ok(t, env, "jobs", "get", "1", "-o", "yaml"); !strings.Contains(out, "name: nightly-report") {
		t.Fatalf("get -o yaml:\n%s", out)
	}
	if out := ok(t, env, "jobs", "update", "nightly-report", "--max-retries", "7"); !strings.Contains(out, "nightly-report") {
		t.Fatalf("update:\n%s", out)
	}
	if err := json.Unmarshal([]byte(ok(t, env, "jobs", "pause", "nightly-report", "-o", "json")), &[]*chronos.Job{&j}); err != nil || j.Enabled || j.MaxRetries != 7 {
		t.Fatalf("pause: %+v, %v", j, err)
	}
	if out := ok(t, env, "jobs", "list", "--enabled", "false"); !strings.Contains(out, "nightly-report") || !strings.Contains(out, "false") {
		t.Fatalf("list paused:\n%s", out)
	}
	ok(t, env, "jobs", "resume", "1")
	out = ok(t, env, "jobs", "trigger", "nightly-report")
	if !strings.Contains(out, "manual") || !strings.Contains(out, "pending") {
		t.Fatalf("trigger:\n%s", out)
	}
	if out := ok(t, env, "runs", "list", "--job", "nightly-report"); !strings.Contains(out, "manual") {
		t.Fatalf("runs list --job:\n%s", out)
	}
	if out := ok(t, env, "runs", "get", "1"); !strings.Contains(out, "ATTEMPT") || !strings.Contains(out, "pending") {
		t.Fatalf("runs get:\n%s", out)
	}
	// Errors are the API's, with exit 1; bad usage is exit 2.
	if code, _, errOut := cli(t, env, "", "runs", "redrive", "1"); code != 1 || !strings.Contains(errOut, "conflict") {
		t.Fatalf("redrive of a pending run: exit %d, %s", code, errOut)
	}
	if code, _, errOut := cli(t, env, "", "jobs", "create", "--name", "x", "--cron", "nope", "--target", "http://127.0.0.1:9/"); code != 1 || !strings.Contains(errOut, "cron_expr") {
		t.Fatalf("invalid create: exit %d, %s", code, errOut)
	}
	if code, _, _ := cli(t, env, "", "jobs", "get"); code != 2 {
		t.Fatalf("jobs get without an id: exit %d", code)
	}
	if code, _, _ := cli(t, env, "", "jobs", "list", "-o", "xml"); code != 2 {
		t.Fatalf("-o xml: exit %d", code)
	}
	// jobs schedule prints the API's answer, whatever it is (a 404 where the endpoint is absent).
	if code, out, errOut := cli(t, env, "", "jobs", "schedule", "nightly-report"); code == 0 && !strings.Contains(out, "FIRE TIME") || code != 0 && !strings.Contains(errOut, "HTTP") {
		t.Fatalf("schedule: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := cli(t, map[string]string{"CHRONOS_URL": env["CHRONOS_URL"], "CHRONOS_API_KEY": "wrong"}, "", "jobs", "list"); code != 1 || !strings.Contains(errOut, "unauthorized") {
		t.Fatalf("wrong key: exit %d, %s", code, errOut)
	}
	ok(t, env, "jobs", "delete", "nightly-report")
	if code, _, errOut := cli(t, env, "", "jobs", "get", "1"); code != 1 || !strings.Contains(errOut, "not_found") {
		t.Fatalf("get deleted: exit %d, %s", code, errOut)
	}
}

// --on-dead-url sets a job's on_dead_url; "" clears it.
func TestCLIOnDeadURL(t *testing.T) {
	env := parallelAPIEnv(t)
	ok(t, env, "jobs", "create", "--name", "alerting", "--cron", "@hourly", "--target", "http://127.0.0.1:9/a",
		"--on-dead-url", "http://127.0.0.1:9/dead")
	if out := ok(t, env, "jobs", "get", "alerting"); !strings.Contains(out, "on_dead_url") || !strings.Contains(out, "http://127.0.0.1:9/dead") {
		t.Fatalf("get:\n%s", out)
	}
	var j chronos.Job
	if err := json.Unmarshal([]byte(ok(t, env, "jobs", "update", "alerting", "--on-dead-url", "", "-o", "json")), &j); err != nil || j.OnDeadURL != nil {
		t.Fatalf("update --on-dead-url '': %+v, %v", j.OnDeadURL, err)
	}
	if code, _, errOut := cli(t, env, "", "jobs", "update", "alerting", "--on-dead-url", "ftp://x/"); code != 1 || !strings.Contains(errOut, "on_dead_url") {
		t.Fatalf("invalid --on-dead-url: exit %d, %s", code, errOut)
	}
}

func TestCLIApply(t *testing.T) {
	env := parallelAPIEnv(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "jobs.yaml")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`jobs:
  - {name: a, cron_expr: "@hourly", target_url: "http://127.0.0.1:9/a"}
  - {name: b, cron_expr: "@daily", target_url: "http://127.0.0.1:9/b", max_retries: 5}
`)
	if out := ok(t, env, "apply", "-f", file, "--dry-run"); !strings.Contains(out, "+ create a") || !strings.Contains(out, "nothing was changed") {
		t.Fatalf("dry run:\n%s", out)
	}
	if out := ok(t, env, "jobs", "list"); strings.Contains(out, "@hourly") {
		t.Fatalf("the dry run wrote:\n%s", out)
	}
	if out := ok(t, env, "apply", "-f", dir); !strings.Contains(out, "2 created") {
		t.Fatalf("apply:\n%s", out)
	}
	if out := ok(t, env, "apply", "-f", file); !strings.Contains(out, "no changes (2 job(s) unchanged)") {
		t.Fatalf("second apply:\n%s", out)
	}
	// stdin, and an edit.
	code, out, errOut := cli(t, env, `[{name: a, cron_expr: "@hourly", target_url: "http://127.0.0.1:9/a2"}]`, "apply", "-f", "-")
	if code != 0 || !strings.Contains(out, `target_url: "http://127.0.0.1:9/a" -> "http://127.0.0.1:9/a2"`) || !strings.Contains(out, "1 updated") {
		t.Fatalf("apply from stdin: exit %d\n%s%s", code, out, errOut)
	}
	// An invalid file is refused whole, naming file, job and field; nothing changes.
	write(`- {name: c, cron_expr: "@hourly", target_url: "http://127.0.0.1:9/c"}
- {name: d, cron_expr: "bad", target_url: "http://127.0.0.1:9/d"}
`)
	code, _, errOut = cli(t, env, "", "apply", "-f", file)
	if code != 1 || !strings.Contains(errOut, "jobs.yaml: job 2 (d): field cron_expr") || !strings.Contains(errOut, "nothing was changed") {
		t.Fatalf("invalid apply: exit %d, %s", code, errOut)
	}
	if out := ok(t, env, "jobs", "list"); strings.Contains(out, "/c") {
		t.Fatalf("the refused apply wrote:\n%s", out)
	}
	if code, _, _ := cli(t, env, "", "apply", "-f", file, "--prune"); code != 2 {
		t.Fatalf("--prune without --selector: exit %d", code)
	}
}

func TestCLICompletion(t *testing.T) {
	t.Parallel()
	for _, sh := range []string{"bash", "zsh", "fish"} {
		if out := ok(t, nil, "completion", sh); !strings.Contains(out, "chronos") {
			t.Errorf("completion %s: %.200s", sh, out)
		}
	}
}
