package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chronoshq/chronos"
)

// TestCLILimits: put, list, get, a job naming the key (flag and apply
// manifest), delete refused while named, delete.
func TestCLILimits(t *testing.T) {
	env := parallelAPIEnv(t)
	if code, _, _ := cli(t, env, "", "limits", "put", "api"); code != 2 {
		t.Fatalf("put without a limit: exit %d, want 2", code)
	}
	ok(t, env, "limits", "put", "api", "--max-concurrency", "5")
	var l chronos.Limit
	if err := json.Unmarshal([]byte(ok(t, env, "limits", "put", "sms", "--rate", "100", "--per-seconds", "60", "-o", "json")), &l); err != nil ||
		*l.Rate != 100 || *l.PerSeconds != 60 || l.MaxConcurrency != nil {
		t.Fatalf("put sms: %+v, %v", l, err)
	}
	out := ok(t, env, "limits", "list")
	for _, want := range []string{"KEY", "api", "5", "sms", "100/60s"} {
		if !strings.Contains(out, want) {
			t.Fatalf("list lacks %q:\n%s", want, out)
		}
	}
	if out := ok(t, env, "limits", "get", "api"); !strings.Contains(out, "max_concurrency") {
		t.Fatalf("get:\n%s", out)
	}
	ok(t, env, "jobs", "create", "--name", "limited", "--cron", "@hourly", "--target", "http://127.0.0.1:9/a", "--limit-key", "api")
	if code, _, errOut := cli(t, env, "", "jobs", "create", "--name", "x", "--cron", "@hourly", "--target", "http://127.0.0.1:9/a",
		"--limit-key", "nope"); code != 1 || !strings.Contains(errOut, "limit_key") {
		t.Fatalf("unknown --limit-key: exit %d, %s", code, errOut)
	}
	file := filepath.Join(t.TempDir(), "jobs.yaml")
	if err := os.WriteFile(file, []byte(`- {name: texts, cron_expr: "@daily", target_url: "http://127.0.0.1:9/s", limit_key: sms}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := ok(t, env, "apply", "-f", file); !strings.Contains(out, "1 created") {
		t.Fatalf("apply:\n%s", out)
	}
	if out := ok(t, env, "apply", "-f", file); !strings.Contains(out, "unchanged") {
		t.Fatalf("second apply:\n%s", out)
	}
	if code, _, errOut := cli(t, env, "", "limits", "delete", "api"); code != 1 || !strings.Contains(errOut, "conflict") {
		t.Fatalf("delete in use: exit %d, %s", code, errOut)
	}
	ok(t, env, "jobs", "update", "limited", "--limit-key", "")
	ok(t, env, "limits", "delete", "api")
	if code, _, _ := cli(t, env, "", "limits", "get", "api"); code != 1 {
		t.Fatalf("get deleted: exit %d", code)
	}
}
