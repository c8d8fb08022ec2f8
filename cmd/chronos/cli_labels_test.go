package main

import (
	"strings"
	"testing"
)

// TestCLILabels: pause and resume by label selector, and list by label.
func TestCLILabels(t *testing.T) {
	env := parallelAPIEnv(t)
	for _, j := range []struct{ name, team string }{{"p1", "payments"}, {"p2", "payments"}, {"o1", "ops"}} {
		code, _, errOut := cli(t, env, "", "jobs", "create", "--name", j.name, "--cron", "@daily", "--target", "http://127.0.0.1:9/", "--label", "team="+j.team)
		if code != 0 && strings.Contains(errOut, "labels") {
			t.Skip("this server's jobs have no labels yet (issue 15's API)")
		}
		if code != 0 {
			t.Fatalf("create %s: %s", j.name, errOut)
		}
	}
	if out := ok(t, env, "jobs", "pause", "-l", "team=payments"); !strings.Contains(out, "2 job(s) paused") {
		t.Fatalf("pause -l:\n%s", out)
	}
	out := ok(t, env, "jobs", "list", "--enabled", "false")
	if !strings.Contains(out, "p1") || !strings.Contains(out, "p2") || strings.Contains(out, "o1") || !strings.Contains(out, "team=payments") {
		t.Fatalf("paused jobs:\n%s", out)
	}
	if out := ok(t, env, "jobs", "list", "-l", "team=ops"); !strings.Contains(out, "o1") || strings.Contains(out, "p1") {
		t.Fatalf("list -l team=ops:\n%s", out)
	}
	if out := ok(t, env, "jobs", "resume", "-l", "team=payments"); !strings.Contains(out, "2 job(s) resumed") {
		t.Fatalf("resume -l:\n%s", out)
	}
	if code, _, _ := cli(t, env, "", "jobs", "pause", "p1", "-l", "team=payments"); code != 2 {
		t.Fatalf("ids and -l together: exit %d", code)
	}
}
