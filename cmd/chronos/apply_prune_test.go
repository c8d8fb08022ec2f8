package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIApplyPruneEmpty: `apply --prune --selector` from an empty set (an
// empty stdin, a file of only comments, `jobs: []`, or jobs none of which
// has the selector's labels) would delete every selected job; it is
// refused, naming --allow-empty, and deletes nothing (issue 22, item 11).
// With --allow-empty it deletes them, as asked.
func TestCLIApplyPruneEmpty(t *testing.T) {
	env := parallelAPIEnv(t)
	manifest := `- {name: p1, cron_expr: "@daily", target_url: "http://127.0.0.1:9/", labels: {team: payments}}
- {name: p2, cron_expr: "@daily", target_url: "http://127.0.0.1:9/", labels: {team: payments}}
- {name: o1, cron_expr: "@daily", target_url: "http://127.0.0.1:9/", labels: {team: ops}}
`
	if code, out, errOut := cli(t, env, manifest, "apply", "-f", "-"); code != 0 || !strings.Contains(out, "3 created") {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	jobsLeft := func() string { return ok(t, env, "jobs", "list") }
	for _, c := range []struct{ what, stdin, file string }{
		{what: "empty stdin", file: "-"},
		{what: "stdin of whitespace", stdin: "\n  \n", file: "-"},
		{what: "a file of only comments", file: file("comments.yaml", "# every job moved to another repository\n# (nothing left here)\n")},
		{what: "jobs: []", file: file("none.yaml", "jobs: []\n")},
		{what: "an empty list", file: file("list.json", "[]")},
		{what: "jobs without the selector's labels", file: file("ops.yaml",
			`- {name: o1, cron_expr: "@daily", target_url: "http://127.0.0.1:9/", labels: {team: ops}}`)},
	} {
		for _, dry := range []bool{false, true} {
			args := []string{"apply", "-f", c.file, "--prune", "--selector", "team=payments"}
			if dry {
				args = append(args, "--dry-run")
			}
			code, out, errOut := cli(t, env, c.stdin, args...)
			if code == 0 || !strings.Contains(errOut, "--allow-empty") || !strings.Contains(errOut, "team=payments") {
				t.Errorf("%s (dry run %v): exit %d, want a refusal naming --allow-empty\nstdout: %s\nstderr: %s", c.what, dry, code, out, errOut)
			}
			if left := jobsLeft(); !strings.Contains(left, "p1") || !strings.Contains(left, "p2") || !strings.Contains(left, "o1") {
				t.Fatalf("%s: the refused prune deleted jobs; left:\n%s", c.what, left)
			}
		}
	}
	// --allow-empty without --prune is a usage error.
	if code, _, _ := cli(t, env, "", "apply", "-f", "-", "--allow-empty"); code != 2 {
		t.Errorf("--allow-empty without --prune: exit %d, want 2", code)
	}
	// A manifest that keeps one selected job prunes the rest, as before.
	code, out, errOut := cli(t, env, `[{name: p1, cron_expr: "@daily", target_url: "http://127.0.0.1:9/", labels: {team: payments}}]`,
		"apply", "-f", "-", "--prune", "--selector", "team=payments")
	if code != 0 || !strings.Contains(out, "1 deleted") {
		t.Fatalf("prune keeping p1: exit %d\n%s%s", code, out, errOut)
	}
	// Asked for explicitly, the empty prune deletes every selected job.
	code, out, errOut = cli(t, env, "", "apply", "-f", "-", "--prune", "--selector", "team=payments", "--allow-empty")
	if code != 0 || !strings.Contains(out, "1 deleted") {
		t.Fatalf("--allow-empty: exit %d\n%s%s", code, out, errOut)
	}
	if left := jobsLeft(); strings.Contains(left, "p1") || !strings.Contains(left, "o1") {
		t.Fatalf("after --allow-empty, left:\n%s", left)
	}
}
