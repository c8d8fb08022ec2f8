package http

import (
	nethttp "net/http"
	"strings"
	"sync"
	"testing"

	"github.com/chronoshq/chronos"
)

// batchOf is a POST /v1/jobs/batch body.
func batchOf(jobs ...any) map[string]any { return map[string]any{"jobs": jobs} }

// TestCreateJobsBatch: up to 1,000 jobs created in one request, in the
// order given, with a generated secret shown for the job that asked.
func TestCreateJobsBatch(t *testing.T) {
	e := parallelEnv(t)
	withSecret := cronJob("b-2")
	withSecret["generate_signing_secret"] = true
	w := e.do("POST", "/v1/jobs/batch", batchOf(cronJob("b-0"), cronJob("b-1"), withSecret))
	wantStatus(t, w, nethttp.StatusCreated)
	type item struct {
		chronos.Job
		SigningSecret string `json:"signing_secret"`
	}
	got := decode[struct{ Jobs []item }](t, w)
	if len(got.Jobs) != 3 {
		t.Fatalf("%d jobs in the answer", len(got.Jobs))
	}
	for i, j := range got.Jobs {
		if j.ID == 0 || j.Name != "b-"+itoa64(int64(i)) || j.NextRunAt == nil {
			t.Fatalf("job %d: %+v", i, j)
		}
	}
	if got.Jobs[0].SigningSecret != "" || !strings.HasPrefix(got.Jobs[2].SigningSecret, "whsec_") {
		t.Fatalf("secrets: %q %q", got.Jobs[0].SigningSecret, got.Jobs[2].SigningSecret)
	}
	if l := decode[jobList](t, e.do("GET", "/v1/jobs", nil)); len(l.Jobs) != 3 {
		t.Fatalf("%d jobs listed", len(l.Jobs))
	}
}

// TestCreateJobsBatchAllOrNothing: one bad job refuses the whole batch,
// each failing job named by its index; nothing is created.
func TestCreateJobsBatchAllOrNothing(t *testing.T) {
	e := parallelEnv(t)
	e.createJob(cronJob("taken"))
	bad := cronJob("x-1")
	bad["cron_expr"] = "nope"
	both := cronJob("x-3")
	both["run_at"] = "2030-01-01T00:00:00Z"
	w := e.do("POST", "/v1/jobs/batch", batchOf(cronJob("x-0"), bad, map[string]any{"name": 5}, both, "[]"))
	wantFields(t, w, "jobs[1].cron_expr", "jobs[2].name", "jobs[4]")
	if f := errorOf(t, w).Fields; f["jobs[3].cron_expr"] == "" && f["jobs[3].run_at"] == "" {
		t.Fatalf("job 3 (cron_expr and run_at) not named: %v", f)
	}

	w = e.do("POST", "/v1/jobs/batch", batchOf(cronJob("y-0"), cronJob("taken"), cronJob("y-0")))
	wantStatus(t, w, nethttp.StatusConflict)
	if f := errorOf(t, w).Fields; f["jobs[1].name"] == "" || f["jobs[2].name"] == "" || len(f) != 2 {
		t.Fatalf("taken names: %v", f)
	}
	if l := decode[jobList](t, e.do("GET", "/v1/jobs", nil)); len(l.Jobs) != 1 {
		t.Fatalf("%d jobs after refused batches, want 1", len(l.Jobs))
	}

	wantFields(t, e.do("POST", "/v1/jobs/batch", batchOf()), "jobs")
	wantFields(t, e.do("POST", "/v1/jobs/batch", `{}`), "jobs")
	wantFields(t, e.do("POST", "/v1/jobs/batch", `{"jobs": [], "x": 1}`), "x")
	many := make([]any, 1001)
	for i := range many {
		many[i] = cronJob("m-" + itoa64(int64(i)))
	}
	wantFields(t, e.do("POST", "/v1/jobs/batch", batchOf(many...)), "jobs")
}

// TestCreateJobsBatchIdempotent: a repeated batch under one
// Idempotency-Key gets the first answer and creates nothing more.
func TestCreateJobsBatchIdempotent(t *testing.T) {
	e := parallelEnv(t)
	body := batchOf(cronJob("i-0"), cronJob("i-1"))
	first := e.doIdem("POST", "/v1/jobs/batch", body, testKey, "batch-1")
	wantStatus(t, first, nethttp.StatusCreated)
	again := e.doIdem("POST", "/v1/jobs/batch", body, testKey, "batch-1")
	if again.Code != nethttp.StatusCreated || again.Body.String() != first.Body.String() || again.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %s", again.Code, again.Body.String())
	}
	if l := decode[jobList](t, e.do("GET", "/v1/jobs", nil)); len(l.Jobs) != 2 {
		t.Fatalf("%d jobs after a repeated batch", len(l.Jobs))
	}
}

// TestIdempotencyKeyConcurrent: requests racing with one key (each past
// the lookup before either wrote) make one run: the second waits for the
// first's transaction, then replays its answer.
func TestIdempotencyKeyConcurrent(t *testing.T) {
	e := parallelEnv(t)
	j := e.createJob(cronJob("race"))
	path := "/v1/jobs/" + itoa64(j.ID) + "/trigger"
	const n = 8
	bodies := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			w := e.doIdem("POST", path, nil, testKey, "race-key")
			if w.Code != nethttp.StatusAccepted {
				t.Errorf("status %d: %s", w.Code, w.Body.String())
			}
			bodies[i] = w.Body.String()
		})
	}
	wg.Wait()
	for i := range bodies {
		if bodies[i] != bodies[0] {
			t.Fatalf("answers differ:\n%s\n%s", bodies[0], bodies[i])
		}
	}
	if runs := decode[runList](t, e.do("GET", "/v1/jobs/"+itoa64(j.ID)+"/runs", nil)); len(runs.Runs) != 1 {
		t.Fatalf("%d runs from %d requests with one key", len(runs.Runs), n)
	}
}
