package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/chronoshq/chronos"
)

// TestCLIListYAMLIsApplyInput: a backup made with `chronos jobs list --all
// -o yaml` restores with `chronos apply -f` (issue 23, item 5): on an
// empty server it creates every job as it was (every field apply manages,
// paused jobs paused), the fields only the server sets (id, timestamps,
// next_run_at, state, signing_secrets metadata) and the page's
// next_cursor are taken as what they are, and a second apply, or an apply
// of the backup to the server it came from, changes nothing. A backup
// holds secret header values as the API shows them, [redacted]: apply
// refuses to store that placeholder as a credential, naming the job and
// the header, and changes nothing until the file holds the real value.
func TestCLIListYAMLIsApplyInput(t *testing.T) {
	t.Parallel()
	from, to := apiEnv(t), apiEnv(t)
	manifest := `
- name: nightly-report
  description: the report
  cron_expr: "0 3 * * *"
  timezone: Europe/Berlin
  target_url: http://127.0.0.1:9/report
  method: PUT
  headers: {X-Env: prod}
  payload: {report: daily, n: 1, nested: {list: [1, "two", null, true]}}
  labels: {team: payments, tier: "1"}
  max_retries: 5
  backoff: linear
  backoff_base_seconds: 1.5
  backoff_max_seconds: 30
  timeout_seconds: 20
  overlap: skip
  starts_at: 2026-01-01T00:00:00Z
  ends_at: 2031-06-30T12:00:00Z
  misfire: all
  starting_deadline_seconds: 300
  jitter_seconds: 45
  exclude: [{from: "2026-12-24", to: "2026-12-26"}]
  on_dead_url: http://127.0.0.1:9/dead
- name: paused-sync
  cron_expr: "@hourly"
  target_url: http://127.0.0.1:9/sync
  enabled: false
- name: one-shot
  run_at: 2030-01-02T03:04:05Z
  target_url: http://127.0.0.1:9/once
  payload: "a string payload"
`
	if code, out, errOut := cli(t, from, manifest, "apply", "-f", "-"); code != 0 || !strings.Contains(out, "3 created") {
		t.Fatalf("apply the manifest: exit %d\n%s%s", code, out, errOut)
	}
	ok(t, from, "jobs", "create", "--name", "signed", "--cron", "*/5 * * * *", "--target", "http://127.0.0.1:9/signed",
		"--generate-signing-secret")

	backup := ok(t, from, "jobs", "list", "--all", "-o", "yaml")
	path := filepath.Join(t.TempDir(), "backup.yaml")
	if err := os.WriteFile(path, []byte(backup), 0o600); err != nil {
		t.Fatal(err)
	}
	// The backup applied to the server it came from: nothing to do.
	if out := ok(t, from, "apply", "-f", path); !strings.Contains(out, "no changes (4 job(s) unchanged)") {
		t.Fatalf("apply of the backup to its own server:\n%s\nbackup:\n%s", out, backup)
	}
	// Restored on an empty server: every job, as it was.
	if out := ok(t, to, "apply", "-f", path); !strings.Contains(out, "4 created") {
		t.Fatalf("restore:\n%s", out)
	}
	if out := ok(t, to, "apply", "-f", path); !strings.Contains(out, "no changes (4 job(s) unchanged)") {
		t.Fatalf("second restore:\n%s", out)
	}
	// One page of a list (no --all) is input too.
	page := ok(t, from, "jobs", "list", "--limit", "2", "-o", "yaml")
	if !strings.Contains(page, "next_cursor") {
		t.Fatalf("a page of 2 of 4 jobs has no next_cursor:\n%s", page)
	}
	if code, out, errOut := cli(t, to, page, "apply", "-f", "-"); code != 0 || !strings.Contains(out, "no changes (2 job(s) unchanged)") {
		t.Fatalf("apply of one page: exit %d\n%s%s", code, out, errOut)
	}
	a, b := managed(t, from), managed(t, to)
	if len(a) != 4 {
		t.Fatalf("source has %d jobs, want 4", len(a))
	}
	for name, want := range a {
		if got := b[name]; got != want {
			t.Errorf("job %s restored as\n%s\nwant\n%s", name, got, want)
		}
	}

	// Secrets: the API shows them redacted, so a backup holds the placeholder.
	ok(t, from, "jobs", "create", "--name", "with-secret", "--cron", "@daily", "--target", "http://127.0.0.1:9/s",
		"--header", "Authorization=Bearer s3cret", "--header", "X-Plain=yes")
	secret := ok(t, from, "jobs", "list", "--all", "-o", "yaml")
	if !strings.Contains(secret, chronos.Redacted) {
		t.Fatalf("the list shows no %s:\n%s", chronos.Redacted, secret)
	}
	for _, target := range []map[string]string{to, apiEnv(t)} {
		code, out, errOut := cli(t, target, secret, "apply", "-f", "-")
		if code == 0 || !strings.Contains(errOut, "with-secret") || !strings.Contains(errOut, "headers.Authorization") ||
			!strings.Contains(errOut, chronos.Redacted) || !strings.Contains(errOut, "nothing was changed") {
			t.Fatalf("apply of a backup with a redacted secret: exit %d, want a refusal naming the job and the header\nstdout: %s\nstderr: %s",
				code, out, errOut)
		}
	}
	if list := ok(t, to, "jobs", "list"); strings.Contains(list, "with-secret") {
		t.Fatalf("the refused apply created the job:\n%s", list)
	}
	// With the real value put back, the restore goes through and the
	// target gets the credential, not the placeholder.
	fixed := strings.Replace(secret, "Authorization: "+chronos.Redacted, "Authorization: Bearer s3cret", 1)
	fixed = strings.Replace(fixed, `Authorization: "`+chronos.Redacted+`"`, "Authorization: Bearer s3cret", 1)
	if code, out, errOut := cli(t, to, fixed, "apply", "-f", "-"); code != 0 || !strings.Contains(out, "1 created") {
		t.Fatalf("apply with the secret filled in: exit %d\n%s%s", code, out, errOut)
	}
}

// managed returns each job of the server (by name) as the JSON of the
// fields apply manages, for comparing two servers' jobs.
func managed(t *testing.T, env map[string]string) map[string]string {
	t.Helper()
	var page struct {
		Jobs []map[string]json.RawMessage `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(ok(t, env, "jobs", "list", "--all", "-o", "json")), &page); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, j := range page.Jobs {
		var name string
		_ = json.Unmarshal(j["name"], &name)
		var keys []string
		for k := range j {
			switch k {
			case "id", "created_at", "updated_at", "next_run_at", "signing_secrets":
				continue
			}
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var sb strings.Builder
		for _, k := range keys {
			sb.WriteString(k + "=" + string(j[k]) + "\n")
		}
		out[name] = sb.String()
	}
	return out
}
