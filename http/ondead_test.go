package http

import (
	"strings"
	"testing"

	"github.com/chronoshq/chronos"
)

// TestOnDeadURL: a job's on_dead_url follows target_url's rules (a 400
// naming on_dead_url for a bad URL, and for a literal address the policy
// refuses, at create and PATCH), is shown in every job response (null
// when unset), and a PATCH sets, changes and clears it (null or "")
// without touching anything else. Every request and response is checked
// against the OpenAPI document on the way (serveChecked).
func TestOnDeadURL(t *testing.T) {
	e := parallelEnv(t)
	strict := newEnvDB(t, e.db, func(c *Config) { c.TargetPolicy = chronos.TargetPolicy{} })

	plain := e.createJob(cronJob("no-alerts"))
	if plain.OnDeadURL != nil {
		t.Fatalf("on_dead_url of a job without one: %q", *plain.OnDeadURL)
	}
	if w := e.do("GET", "/v1/jobs/"+itoa64(plain.ID), nil); !strings.Contains(w.Body.String(), `"on_dead_url":null`) {
		t.Fatalf("GET shows no on_dead_url: null: %s", w.Body.String())
	}

	body := cronJob("alerting")
	body["on_dead_url"] = "https://hooks.example.com/services/T0/B0/x"
	j := e.createJob(body)
	if j.OnDeadURL == nil || *j.OnDeadURL != "https://hooks.example.com/services/T0/B0/x" {
		t.Fatalf("created with on_dead_url %v", j.OnDeadURL)
	}
	path := "/v1/jobs/" + itoa64(j.ID)

	for _, bad := range []any{"ftp://hooks.example.com/", "not a url", "https://user:pw@hooks.example.com/", "http://169.254.169.254/", 42} {
		b := cronJob("bad-alerts")
		b["on_dead_url"] = bad
		wantFields(t, e.do("POST", "/v1/jobs", b), "on_dead_url")
		wantFields(t, e.do("PATCH", path, map[string]any{"on_dead_url": bad}), "on_dead_url")
	}
	// The address policy in force, at create and PATCH.
	b := cronJob("private-alerts")
	b["target_url"] = "https://hooks.example.com/target"
	b["on_dead_url"] = "http://10.0.0.1/hook"
	wantFields(t, strict.do("POST", "/v1/jobs", b), "on_dead_url")
	wantFields(t, strict.do("PATCH", path, map[string]any{"on_dead_url": "http://192.168.1.1/"}), "on_dead_url")
	wantStatus(t, strict.do("PATCH", path, map[string]any{"on_dead_url": "https://hooks.example.com/other"}), 200)

	patch := func(v any) *chronos.Job {
		t.Helper()
		w := e.do("PATCH", path, map[string]any{"on_dead_url": v})
		wantStatus(t, w, 200)
		return decode[*chronos.Job](t, w)
	}
	if got := patch("http://127.0.0.1:9/dead"); got.OnDeadURL == nil || *got.OnDeadURL != "http://127.0.0.1:9/dead" || got.TargetURL != j.TargetURL {
		t.Fatalf("PATCH set: %+v", got)
	}
	// A PATCH of something else leaves it.
	w := e.do("PATCH", path, map[string]any{"max_retries": 7})
	wantStatus(t, w, 200)
	if got := decode[*chronos.Job](t, w); got.OnDeadURL == nil || *got.OnDeadURL != "http://127.0.0.1:9/dead" {
		t.Fatalf("PATCH of max_retries touched on_dead_url: %v", got.OnDeadURL)
	}
	if got := patch(nil); got.OnDeadURL != nil {
		t.Fatalf("PATCH null kept %q", *got.OnDeadURL)
	}
	patch("http://127.0.0.1:9/dead")
	if got := patch(""); got.OnDeadURL != nil {
		t.Fatalf(`PATCH "" kept %q`, *got.OnDeadURL)
	}
	// Each change is in the job's history.
	hist := e.do("GET", path+"/history", nil)
	wantStatus(t, hist, 200)
	if !strings.Contains(hist.Body.String(), `"on_dead_url"`) {
		t.Fatalf("history lacks on_dead_url: %s", hist.Body.String())
	}
}
