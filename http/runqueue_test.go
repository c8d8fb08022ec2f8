package http

import (
	"context"
	"fmt"
	nethttp "net/http"
	"sync"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
)

// killRuns makes runs dead as a worker that gave up would.
func (e *env) killRuns(ids ...int64) {
	e.t.Helper()
	_, err := e.db.Pool.Exec(context.Background(), `
		UPDATE job_runs SET status = 'dead', attempt_count = 1, finished_at = now(), last_error = 'HTTP 503'
		 WHERE id = ANY($1)`, ids)
	if err != nil {
		e.t.Fatal(err)
	}
}

// trigger makes a manual run of the job.
func (e *env) trigger(jobID int64) *chronos.Run {
	e.t.Helper()
	w := e.do("POST", fmt.Sprintf("/v1/jobs/%d/trigger", jobID), nil)
	wantStatus(e.t, w, nethttp.StatusAccepted)
	return decode[*chronos.Run](e.t, w)
}

// TestRunsAcrossJobs: GET /v1/runs filters by status, job, trigger and
// creation time, newest first, in keyset pages; bad filters are 400s
// naming them.
func TestRunsAcrossJobs(t *testing.T) {
	e := parallelEnv(t)
	a, b := e.createJob(cronJob("a")), e.createJob(cronJob("b"))
	var dead []int64
	for i := 0; i < 3; i++ {
		ra, rb := e.trigger(a.ID), e.trigger(b.ID)
		dead = append(dead, ra.ID, rb.ID)
	}
	live := e.trigger(a.ID)
	e.killRuns(dead...)

	all := decode[runList](t, e.do("GET", "/v1/runs?status=dead&limit=4", nil))
	if len(all.Runs) != 4 || all.NextCursor == nil || all.Runs[0].ID != dead[5] {
		t.Fatalf("first page %+v", all)
	}
	rest := decode[runList](t, e.do("GET", "/v1/runs?status=dead&limit=4&cursor="+*all.NextCursor, nil))
	if len(rest.Runs) != 2 || rest.NextCursor != nil || rest.Runs[1].ID != dead[0] {
		t.Fatalf("second page %+v", rest)
	}
	onlyA := decode[runList](t, e.do("GET", fmt.Sprintf("/v1/runs?status=dead&job_id=%d", a.ID), nil))
	if len(onlyA.Runs) != 3 || onlyA.Runs[0].JobID != a.ID {
		t.Fatalf("job filter %+v", onlyA)
	}
	pending := decode[runList](t, e.do("GET", "/v1/runs?status=pending&trigger=manual", nil))
	if len(pending.Runs) != 1 || pending.Runs[0].ID != live.ID {
		t.Fatalf("pending %+v", pending)
	}
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if got := decode[runList](t, e.do("GET", "/v1/runs?since="+future, nil)); len(got.Runs) != 0 {
		t.Fatalf("since the future: %+v", got)
	}
	if got := decode[runList](t, e.do("GET", "/v1/runs?until="+future, nil)); len(got.Runs) != 7 {
		t.Fatalf("until the future: %d runs", len(got.Runs))
	}
	wantFields(t, e.do("GET", "/v1/runs?status=gone", nil), "status")
	wantFields(t, e.do("GET", "/v1/runs?trigger=cron", nil), "trigger")
	wantFields(t, e.do("GET", "/v1/runs?job_id=0", nil), "job_id")
	wantFields(t, e.do("GET", "/v1/runs?since=yesterday", nil), "since")
	wantFields(t, e.do("GET", "/v1/runs?since="+future+"&until="+future, nil), "until")
	wantFields(t, e.do("GET", "/v1/runs?cursor=nope", nil), "cursor")
	wantFields(t, e.do("GET", "/v1/runs?colour=red", nil), "colour")
}

// TestBulkRedrive: POST /v1/runs/redrive redrives the matching dead runs
// that were never redriven, answers with the new runs, honours limit and
// says whether more remain; a second call finds nothing while the
// redrives are active, and two concurrent calls never redrive one run
// twice.
func TestBulkRedrive(t *testing.T) {
	e := parallelEnv(t)
	a, b := e.createJob(cronJob("a")), e.createJob(cronJob("b"))
	var deadA []int64
	for i := 0; i < 3; i++ {
		deadA = append(deadA, e.trigger(a.ID).ID)
	}
	deadB := e.trigger(b.ID).ID
	e.killRuns(append(deadA, deadB)...)

	w := e.do("POST", fmt.Sprintf("/v1/runs/redrive?job_id=%d&limit=2", a.ID), nil)
	wantStatus(t, w, nethttp.StatusAccepted)
	res := decode[redriveResult](t, w)
	if res.Count != 2 || !res.More || *res.Runs[0].RedriveOf != deadA[0] || *res.Runs[1].RedriveOf != deadA[1] ||
		res.Runs[0].Trigger != chronos.TriggerRedrive || res.Runs[0].Status != chronos.StatusPending {
		t.Fatalf("first call %+v", res)
	}
	res = decode[redriveResult](t, e.do("POST", fmt.Sprintf("/v1/runs/redrive?job_id=%d", a.ID), nil))
	if res.Count != 1 || res.More || *res.Runs[0].RedriveOf != deadA[2] {
		t.Fatalf("second call %+v", res)
	}
	res = decode[redriveResult](t, e.do("POST", fmt.Sprintf("/v1/runs/redrive?job_id=%d", a.ID), nil))
	if res.Count != 0 || res.More || res.Runs == nil {
		t.Fatalf("third call %+v", res)
	}
	// The single-run redrive agrees: an active redrive blocks another.
	wantStatus(t, e.do("POST", fmt.Sprintf("/v1/runs/%d/redrive", deadA[0]), nil), nethttp.StatusConflict)

	// A redrive that dies is a dead run of its own, offered once.
	firstRedrives := decode[runList](t, e.do("GET", fmt.Sprintf("/v1/runs?trigger=redrive&job_id=%d", a.ID), nil))
	e.killRuns(firstRedrives.Runs[0].ID)
	res = decode[redriveResult](t, e.do("POST", "/v1/runs/redrive?trigger=redrive", nil))
	if res.Count != 1 || *res.Runs[0].RedriveOf != firstRedrives.Runs[0].ID {
		t.Fatalf("redrive of a dead redrive %+v", res)
	}

	// Concurrent calls: job b's dead run is redriven exactly once.
	var wg sync.WaitGroup
	counts := make([]int, 4)
	for i := range counts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := e.do("POST", fmt.Sprintf("/v1/runs/redrive?job_id=%d", b.ID), nil)
			if w.Code == nethttp.StatusAccepted {
				counts[i] = decode[redriveResult](t, w).Count
			}
		}()
	}
	wg.Wait()
	if total := counts[0] + counts[1] + counts[2] + counts[3]; total != 1 {
		t.Fatalf("concurrent redrives made %d runs (%v)", total, counts)
	}

	wantFields(t, e.do("POST", "/v1/runs/redrive?status=pending", nil), "status")
	wantFields(t, e.do("POST", "/v1/runs/redrive?limit=0", nil), "limit")
	wantFields(t, e.do("POST", "/v1/runs/redrive?cursor=x", nil), "cursor")
	wantFields(t, e.do("POST", "/v1/runs/redrive", `{"x":1}`), "body")
}
