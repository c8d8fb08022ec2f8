package http

import (
	"fmt"
	nethttp "net/http"
	"testing"

	"github.com/chronoshq/chronos"
)

// TestLimitsAPI walks a limit through every route, checked against the
// contract: create (201), replace (200), get, list, a job naming it
// (create, PATCH, get), an unknown key (400 naming limit_key), delete
// while named (409), delete (204), and a get of a deleted one (404).
func TestLimitsAPI(t *testing.T) {
	e := parallelEnv(t)

	w := e.do("PUT", "/v1/limits/api.example", map[string]any{"max_concurrency": 5, "rate": 100, "per_seconds": 60})
	wantStatus(t, w, nethttp.StatusCreated)
	l := decode[chronos.Limit](t, w)
	if l.Key != "api.example" || *l.MaxConcurrency != 5 || *l.Rate != 100 || *l.PerSeconds != 60 ||
		l.InFlight != 0 || l.TokensLeft == nil || *l.TokensLeft != 100 || l.Jobs != 0 {
		t.Fatalf("created %+v", l)
	}
	w = e.do("PUT", "/v1/limits/api.example", map[string]any{"max_concurrency": 3})
	wantStatus(t, w, nethttp.StatusOK)
	if l = decode[chronos.Limit](t, w); *l.MaxConcurrency != 3 || l.Rate != nil || l.TokensLeft != nil {
		t.Fatalf("replaced %+v", l)
	}
	w = e.do("PUT", "/v1/limits/per-second", map[string]any{"rate": 50})
	wantStatus(t, w, nethttp.StatusCreated)
	if l = decode[chronos.Limit](t, w); *l.PerSeconds != 1 || l.MaxConcurrency != nil {
		t.Fatalf("rate only %+v", l)
	}

	body := cronJob("limited")
	body["limit_key"] = "api.example"
	j := e.createJob(body)
	if j.LimitKey == nil || *j.LimitKey != "api.example" {
		t.Fatalf("job limit_key %v", j.LimitKey)
	}
	w = e.do("GET", fmt.Sprintf("/v1/jobs/%d", j.ID), nil)
	wantStatus(t, w, nethttp.StatusOK)
	if g := decode[chronos.Job](t, w); g.LimitKey == nil || *g.LimitKey != "api.example" {
		t.Fatalf("got job limit_key %v", g.LimitKey)
	}
	w = e.do("GET", "/v1/limits/api.example", nil)
	wantStatus(t, w, nethttp.StatusOK)
	if l = decode[chronos.Limit](t, w); l.Jobs != 1 {
		t.Fatalf("get %+v, want 1 job", l)
	}
	w = e.do("GET", "/v1/limits", nil)
	wantStatus(t, w, nethttp.StatusOK)
	if ls := decode[limitList](t, w); len(ls.Limits) != 2 || ls.Limits[0].Key != "api.example" || ls.Limits[1].Key != "per-second" {
		t.Fatalf("list %+v", ls)
	}

	// Unknown keys, bad keys, bad bodies.
	bad := cronJob("unknown-key")
	bad["limit_key"] = "nope"
	wantFields(t, e.do("POST", "/v1/jobs", bad), "limit_key")
	wantFields(t, e.do("PATCH", fmt.Sprintf("/v1/jobs/%d", j.ID), map[string]any{"limit_key": "nope"}), "limit_key")
	wantFields(t, e.do("PATCH", fmt.Sprintf("/v1/jobs/%d", j.ID), map[string]any{"limit_key": "has space"}), "limit_key")
	wantFields(t, e.do("PUT", "/v1/limits/api.example", map[string]any{}), "max_concurrency", "rate")
	wantFields(t, e.do("PUT", "/v1/limits/api.example", map[string]any{"max_concurrency": 0}), "max_concurrency")
	wantFields(t, e.do("PUT", "/v1/limits/api.example", map[string]any{"max_concurrency": 1, "per_seconds": 5}), "per_seconds")
	wantFields(t, e.do("PUT", "/v1/limits/api.example", map[string]any{"max_concurrency": 1, "burst": 5}), "burst")
	wantFields(t, e.do("GET", "/v1/limits/-bad", nil), "key")
	wantStatus(t, e.do("GET", "/v1/limits/missing", nil), nethttp.StatusNotFound)

	// In use: 409; PATCH the job to the other key, then to none.
	w = e.do("DELETE", "/v1/limits/api.example", nil)
	wantStatus(t, w, nethttp.StatusConflict)
	if errorOf(t, w).Code != chronos.ECONFLICT {
		t.Fatalf("delete in use: %s", w.Body.String())
	}
	w = e.do("PATCH", fmt.Sprintf("/v1/jobs/%d", j.ID), map[string]any{"limit_key": "per-second"})
	wantStatus(t, w, nethttp.StatusOK)
	if g := decode[chronos.Job](t, w); g.LimitKey == nil || *g.LimitKey != "per-second" {
		t.Fatalf("patched limit_key %v", g.LimitKey)
	}
	wantStatus(t, e.do("DELETE", "/v1/limits/api.example", nil), nethttp.StatusNoContent)
	wantStatus(t, e.do("DELETE", "/v1/limits/api.example", nil), nethttp.StatusNotFound)
	w = e.do("PATCH", fmt.Sprintf("/v1/jobs/%d", j.ID), map[string]any{"limit_key": nil})
	wantStatus(t, w, nethttp.StatusOK)
	if g := decode[chronos.Job](t, w); g.LimitKey != nil {
		t.Fatalf("cleared limit_key %v", *g.LimitKey)
	}
	wantStatus(t, e.do("DELETE", "/v1/limits/per-second", nil), nethttp.StatusNoContent)
}
