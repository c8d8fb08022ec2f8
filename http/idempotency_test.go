package http

import (
	"context"
	"fmt"
	nethttp "net/http"
	"net/http/httptest"
	"testing"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/http/apitest"
)

// doIdem sends a request with an Idempotency-Key.
func (e *env) doIdem(method, path string, body any, key, idem string) *httptest.ResponseRecorder {
	e.t.Helper()
	r := apitest.Body(e.t, body)
	req := httptest.NewRequestWithContext(context.Background(), method, path, r)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Idempotency-Key", idem)
	return e.serveChecked(req)
}

// TestIdempotencyKey: a repeated POST with the same key gets the first
// response and changes nothing; another body under the key is a 422;
// keys are per API key name; trigger and both redrives honour it.
func TestIdempotencyKey(t *testing.T) {
	e := parallelEnv(t, func(c *Config) { c.APIKeys = []string{"alice:write:" + testKey, "bob:write:bob-key-0123456789"} })
	body := cronJob("idem")
	first := e.doIdem("POST", "/v1/jobs", body, testKey, "create-1")
	wantStatus(t, first, nethttp.StatusCreated)
	again := e.doIdem("POST", "/v1/jobs", body, testKey, "create-1")
	wantStatus(t, again, nethttp.StatusCreated)
	if again.Body.String() != first.Body.String() || again.Header().Get("Idempotent-Replayed") != "true" ||
		again.Header().Get("Location") != first.Header().Get("Location") {
		t.Fatalf("replay differs:\n%s\n%s", first.Body.String(), again.Body.String())
	}
	if l := decode[jobList](t, e.do("GET", "/v1/jobs", nil)); len(l.Jobs) != 1 {
		t.Fatalf("%d jobs after a repeated create", len(l.Jobs))
	}
	other := cronJob("idem-2")
	w := e.doIdem("POST", "/v1/jobs", other, testKey, "create-1")
	wantStatus(t, w, nethttp.StatusUnprocessableEntity)
	if errorOf(t, w).Code != "idempotency_key_reused" {
		t.Fatalf("422 body %s", w.Body.String())
	}
	// Another API key name has its own keys: bob's create-1 is new (and
	// the name is taken: a 409, which is then what bob's key replays).
	w = e.doIdem("POST", "/v1/jobs", body, "bob-key-0123456789", "create-1")
	wantStatus(t, w, nethttp.StatusConflict)
	w = e.doIdem("POST", "/v1/jobs", body, "bob-key-0123456789", "create-1")
	if w.Code != nethttp.StatusConflict || w.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("bob's replay: %d %v", w.Code, w.Header())
	}

	j := decode[*chronos.Job](t, first)
	path := fmt.Sprintf("/v1/jobs/%d/trigger", j.ID)
	r1 := decode[*chronos.Run](t, e.doIdem("POST", path, nil, testKey, "trig"))
	r2 := decode[*chronos.Run](t, e.doIdem("POST", path, nil, testKey, "trig"))
	if r1.ID != r2.ID {
		t.Fatalf("repeated trigger made run %d then %d", r1.ID, r2.ID)
	}
	if runs := decode[runList](t, e.do("GET", fmt.Sprintf("/v1/jobs/%d/runs", j.ID), nil)); len(runs.Runs) != 1 {
		t.Fatalf("%d runs after a repeated trigger", len(runs.Runs))
	}
	wantStatus(t, e.doIdem("POST", path, `{}`, testKey, "trig"), nethttp.StatusAccepted) // {} is no body
	wantStatus(t, e.doIdem("POST", fmt.Sprintf("/v1/jobs/%d/trigger", j.ID+1000), nil, testKey, "trig"), nethttp.StatusUnprocessableEntity)

	e.killRuns(r1.ID)
	rd := e.doIdem("POST", fmt.Sprintf("/v1/runs/%d/redrive", r1.ID), nil, testKey, "rd")
	wantStatus(t, rd, nethttp.StatusAccepted)
	rd2 := e.doIdem("POST", fmt.Sprintf("/v1/runs/%d/redrive", r1.ID), nil, testKey, "rd")
	if rd2.Code != nethttp.StatusAccepted || rd2.Body.String() != rd.Body.String() {
		t.Fatalf("repeated redrive: %d %s", rd2.Code, rd2.Body.String())
	}
	bulk := e.doIdem("POST", "/v1/runs/redrive?job_id="+itoa64(j.ID), nil, testKey, "bulk")
	bulk2 := e.doIdem("POST", "/v1/runs/redrive?job_id="+itoa64(j.ID), nil, testKey, "bulk")
	if bulk.Body.String() != bulk2.Body.String() {
		t.Fatalf("bulk replay differs")
	}
	wantStatus(t, e.doIdem("POST", "/v1/runs/redrive?job_id="+itoa64(j.ID+1000), nil, testKey, "bulk"), nethttp.StatusUnprocessableEntity)

	wantFields(t, e.doIdem("POST", "/v1/jobs", cronJob("x"), testKey, string(make([]byte, 256))), "Idempotency-Key")
	wantFields(t, e.doIdem("POST", "/v1/jobs", cronJob("x"), testKey, "tab\there"), "Idempotency-Key")
}

// TestIdempotencyKeyExpires: after 24 hours the key is new again.
func TestIdempotencyKeyExpires(t *testing.T) {
	e := parallelEnv(t)
	wantStatus(t, e.doIdem("POST", "/v1/jobs", cronJob("a"), testKey, "k"), nethttp.StatusCreated)
	if _, err := e.db.Pool.Exec(context.Background(), `UPDATE idempotency_keys SET created_at = now() - interval '25 hours'`); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, e.doIdem("POST", "/v1/jobs", cronJob("b"), testKey, "k"), nethttp.StatusCreated)
	if n, err := e.db.PruneIdempotencyKeys(context.Background(), 10); err != nil || n != 0 {
		t.Fatalf("pruned %d %v: the fresh key must stay", n, err)
	}
	if _, err := e.db.Pool.Exec(context.Background(), `UPDATE idempotency_keys SET created_at = now() - interval '25 hours'`); err != nil {
		t.Fatal(err)
	}
	if n, err := e.db.PruneIdempotencyKeys(context.Background(), 10); err != nil || n != 1 {
		t.Fatalf("pruned %d %v", n, err)
	}
}
