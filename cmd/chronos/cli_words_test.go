package main

import (
	"strings"
	"testing"
)

// TestCLIJobByNameErrorsShowTheStatus: a name no job has is a not_found
// with its HTTP status, as an unknown id is (the walkthrough shows it).
func TestCLIJobByNameErrorsShowTheStatus(t *testing.T) {
	env := parallelAPIEnv(t)
	for _, arg := range []string{"nope", "99"} {
		code, _, errOut := cli(t, env, "", "jobs", "get", arg)
		if code != 1 || !strings.Contains(errOut, "chronos: not_found: ") || !strings.HasSuffix(strings.TrimSpace(errOut), "(HTTP 404)") {
			t.Errorf("jobs get %s: exit %d, stderr %q; want not_found ... (HTTP 404)", arg, code, errOut)
		}
	}
}

// TestCLIHistoryOutlivesTheJob: `jobs history NAME` finds a deleted job's
// history by the name it had; a live job of that name comes first.
func TestCLIHistoryOutlivesTheJob(t *testing.T) {
	env := parallelAPIEnv(t)
	ok(t, env, "jobs", "create", "--name", "nightly-3", "--cron", "0 3 * * *", "--target", "http://127.0.0.1:9/x")
	ok(t, env, "jobs", "update", "nightly-3", "--max-retries", "5")
	ok(t, env, "jobs", "delete", "nightly-3")
	out := ok(t, env, "jobs", "history", "nightly-3")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.Contains(lines[1], " delete ") || !strings.Contains(lines[2], " update ") || !strings.Contains(lines[3], " create ") {
		t.Fatalf("history of the deleted nightly-3:\n%s", out)
	}
	ok(t, env, "jobs", "create", "--name", "nightly-3", "--cron", "0 4 * * *", "--target", "http://127.0.0.1:9/x")
	if out := ok(t, env, "jobs", "history", "nightly-3"); strings.Count(strings.TrimSpace(out), "\n") != 1 || !strings.Contains(out, " create ") {
		t.Fatalf("history of the new nightly-3:\n%s", out)
	}
	if code, _, errOut := cli(t, env, "", "jobs", "history", "never-was"); code != 1 || !strings.Contains(errOut, `no job named "never-was" (HTTP 404)`) {
		t.Fatalf("history of a name never used: exit %d, %s", code, errOut)
	}
}
