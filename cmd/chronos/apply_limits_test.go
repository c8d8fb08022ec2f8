package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/client"
)

// limitsManifest declares two limits and a job naming one of them: the
// limit must be put before the job is created (an undeclared limit_key is
// a 400).
const limitsManifest = `
kind: Limit
key: sms
rate: 100
per_seconds: 60
---
kind: Limit
key: api.example.com
max_concurrency: 5
---
- name: texts
  cron_expr: "@daily"
  target_url: http://127.0.0.1:9/sms
  limit_key: sms
  labels: {team: pay}
`

// TestCLIApplyLimits: kind: Limit in apply -f (issue 24): a dry run that
// changes nothing and says what it would, the create before the job that
// names it, a second apply with no change, an update of the rate shown
// field by field, a prune that deletes (after the jobs moved off it) the
// limits the files no longer list, a manifest of jobs alone leaving the
// limits alone, and bad limits refusing the whole apply.
func TestCLIApplyLimits(t *testing.T) {
	env := parallelAPIEnv(t)
	limit := func(key string) (*chronos.Limit, bool) {
		code, out, _ := cli(t, env, "", "limits", "get", key, "-o", "json")
		if code != 0 {
			return nil, false
		}
		var l chronos.Limit
		if err := json.Unmarshal([]byte(out), &l); err != nil {
			t.Fatalf("limits get %s: %v\n%s", key, err, out)
		}
		return &l, true
	}
	apply := func(manifest string, args ...string) string {
		t.Helper()
		code, out, errOut := cli(t, env, manifest, append([]string{"apply", "-f", "-"}, args...)...)
		if code != 0 {
			t.Fatalf("apply %v: exit %d\nstdout: %s\nstderr: %s", args, code, out, errOut)
		}
		return out
	}
	contains := func(what, out string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: no %q in\n%s", what, w, out)
			}
		}
	}

	// The dry run says what it would do and does nothing.
	out := apply(limitsManifest, "--dry-run")
	contains("dry run", out, "+ create limit sms\n", "+ create limit api.example.com\n", "+ create texts\n",
		"limits: 2 to create, 0 to update, 0 to delete, 0 unchanged\n", "dry run: 1 to change, 0 unchanged; nothing was changed")
	if strings.Index(out, "+ create limit sms") > strings.Index(out, "+ create texts") {
		t.Errorf("dry run: the limits are not planned before the job that names one:\n%s", out)
	}
	if _, found := limit("sms"); found {
		t.Fatal("the dry run created limit sms")
	}

	// The apply puts the limits, then creates the job naming one.
	out = apply(limitsManifest)
	contains("apply", out, "limits: 2 created, 0 updated, 0 deleted, 0 unchanged\n", "1 created, 0 updated, 0 deleted, 0 unchanged")
	if l, found := limit("sms"); !found || l.Rate == nil || *l.Rate != 100 || *l.PerSeconds != 60 || l.MaxConcurrency != nil || l.Jobs != 1 {
		t.Fatalf("sms after apply: %+v", l)
	}
	if l, found := limit("api.example.com"); !found || l.MaxConcurrency == nil || *l.MaxConcurrency != 5 || l.Rate != nil {
		t.Fatalf("api.example.com after apply: %+v", l)
	}

	// Again: nothing to do, nothing written.
	out = apply(limitsManifest)
	contains("second apply", out, "no changes (1 job(s), 2 limit(s) unchanged)")

	// A changed rate, per_seconds left out (per second): an update of
	// those fields, with their values.
	changed := strings.Replace(limitsManifest, "rate: 100\nper_seconds: 60\n", "rate: 50\n", 1)
	out = apply(changed, "--dry-run")
	contains("changed, dry run", out, "~ update limit sms (per_seconds: 60 -> 1, rate: 100 -> 50)\n",
		"limits: 0 to create, 1 to update, 0 to delete, 1 unchanged\n", "dry run: 0 to change, 1 unchanged")
	if l, _ := limit("sms"); *l.Rate != 100 {
		t.Fatalf("the dry run changed sms: %+v", l)
	}
	out = apply(changed)
	contains("changed", out, "limits: 0 created, 1 updated, 0 deleted, 1 unchanged\n")
	if l, _ := limit("sms"); *l.Rate != 50 || *l.PerSeconds != 1 {
		t.Fatalf("sms after the update: %+v", l)
	}
	// The plan's JSON form names the kind.
	var plan struct {
		Objects []struct {
			Kind, Action, Name string
		} `json:"objects"`
		ObjectsUnchanged map[string]int `json:"objects_unchanged"`
	}
	code, js, errOut := cli(t, env, strings.Replace(changed, "max_concurrency: 5", "max_concurrency: 6", 1), "apply", "-f", "-", "--dry-run", "-o", "json")
	if err := json.Unmarshal([]byte(js), &plan); code != 0 || err != nil || len(plan.Objects) != 1 || plan.Objects[0].Kind != "Limit" ||
		plan.Objects[0].Action != "update" || plan.Objects[0].Name != "api.example.com" || plan.ObjectsUnchanged["Limit"] != 1 {
		t.Fatalf("-o json: exit %d, %+v, %v\n%s%s", code, plan, err, js, errOut)
	}

	// Prune: the job moves to api.example.com and sms leaves the files;
	// sms (named by the job until the job's update) and a limit put by
	// hand are deleted after the jobs.
	ok(t, env, "limits", "put", "by-hand", "--max-concurrency", "1")
	moved := strings.Replace(strings.Replace(changed, "kind: Limit\nkey: sms\nrate: 50\n---\n", "", 1), "limit_key: sms", "limit_key: api.example.com", 1)
	out = apply(moved, "--prune", "--selector", "team=pay")
	contains("prune", out, "~ update texts", "- delete limit by-hand\n", "- delete limit sms\n",
		"limits: 0 created, 0 updated, 2 deleted, 1 unchanged\n", "0 created, 1 updated, 0 deleted, 0 unchanged")
	for _, key := range []string{"sms", "by-hand"} {
		if _, found := limit(key); found {
			t.Errorf("limit %s survived the prune", key)
		}
	}
	if _, found := limit("api.example.com"); !found {
		t.Fatal("the prune deleted api.example.com, which the files list")
	}

	// A manifest of jobs alone manages no limits: its prune leaves them.
	jobsOnly := moved[strings.Index(moved, "- name: texts"):]
	out = apply(jobsOnly, "--prune", "--selector", "team=pay")
	contains("jobs alone", out, "no changes (1 job(s) unchanged)")
	if strings.Contains(out, "limit") {
		t.Errorf("jobs alone: the plan touches limits:\n%s", out)
	}
	if _, found := limit("api.example.com"); !found {
		t.Fatal("a prune of jobs alone deleted a limit")
	}

	// Bad limits refuse the whole apply, each problem named; nothing changes.
	bad := `
kind: Limit
key: "no spaces"
rate: 0
---
kind: Limit
key: fast
rate: lots
---
kind: Limit
key: nothing
colour: red
---
kind: Limit
key: api.example.com
max_concurrency: 7
---
kind: Limit
key: api.example.com
max_concurrency: 8
---
kind: Limits
key: typo
---
- {name: other, cron_expr: "@daily", target_url: "http://127.0.0.1:9/o"}
`
	code, out, errOut = cli(t, env, bad, "apply", "-f", "-")
	if code == 0 {
		t.Fatalf("bad limits: exit 0\n%s", out)
	}
	contains("bad limits", errOut,
		"limit 1 (no spaces): field key: must be 1 to 128",
		"limit 1 (no spaces): field rate: must be between 1 and",
		"limit 2 (fast): field rate: must be int",
		"limit 3 (nothing): field colour: unknown field",
		"limit 3 (nothing): field max_concurrency: one of max_concurrency or rate is required",
		`limit 5 (api.example.com): field key: "api.example.com" is also the key of <stdin>: limit 4 (api.example.com)`,
		`item 6: field kind: "Limits" is not a kind (want Job, Calendar, Limit)`,
		"nothing was changed")
	if l, _ := limit("api.example.com"); *l.MaxConcurrency != 5 {
		t.Fatalf("the refused apply changed api.example.com: %+v", l)
	}
	if code, _, _ := cli(t, env, "", "jobs", "get", "other"); code == 0 {
		t.Fatal("the refused apply created job other")
	}
}

// TestDocsManifestSamples: the manifests with limits and calendars that
// docs/cli.md and docs/limits.md show are valid apply input.
func TestDocsManifestSamples(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{"../../docs/cli.md", "../../docs/limits.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		blocks := strings.Split(string(b), "```yaml\n")[1:]
		n := 0
		for _, blk := range blocks {
			blk, _, _ = strings.Cut(blk, "```")
			if !strings.Contains(blk, "kind: Limit") {
				continue
			}
			n++
			m, err := client.LoadManifestAll([]string{"-"}, strings.NewReader(blk))
			if err != nil || len(m.Objects) == 0 || len(m.Jobs) == 0 {
				t.Errorf("%s: the sample manifest does not load: %v\n%s", doc, err, blk)
			}
		}
		if n == 0 {
			t.Errorf("%s: no yaml sample with kind: Limit", doc)
		}
	}
}
