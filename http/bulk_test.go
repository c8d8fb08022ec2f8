package http

import (
	"fmt"
	nethttp "net/http"
	"testing"
)

// TestBulkPauseResume: POST /v1/jobs/pause and /resume change exactly the
// jobs with every given label, as a PATCH of enabled would (paused jobs
// show no next run; history says pause/resume), and refuse a missing or
// malformed selector.
func TestBulkPauseResume(t *testing.T) {
	e := parallelEnv(t)
	mk := func(name string, labels map[string]string) int64 {
		b := cronJob(name)
		b["labels"] = labels
		return e.createJob(b).ID
	}
	p1 := mk("p1", map[string]string{"team": "payments", "env": "prod"})
	p2 := mk("p2", map[string]string{"team": "payments", "env": "dev"})
	other := mk("o", map[string]string{"team": "core", "env": "prod"})

	w := e.do("POST", "/v1/jobs/pause?label=team=payments", nil)
	wantStatus(t, w, nethttp.StatusOK)
	res := decode[bulkResult](t, w)
	if res.Count != 2 || fmt.Sprint(res.JobIDs) != fmt.Sprint([]int64{p1, p2}) || res.More {
		t.Fatalf("pause %+v", res)
	}
	for _, id := range []int64{p1, p2} {
		j := decode[map[string]any](t, e.do("GET", fmt.Sprintf("/v1/jobs/%d", id), nil))
		if j["enabled"] != false || j["next_run_at"] != nil {
			t.Fatalf("job %d after pause: %v", id, j)
		}
	}
	if j := decode[map[string]any](t, e.do("GET", fmt.Sprintf("/v1/jobs/%d", other), nil)); j["enabled"] != true {
		t.Fatalf("unlabelled job paused: %v", j)
	}
	if res := decode[bulkResult](t, e.do("POST", "/v1/jobs/pause?label=team=payments", nil)); res.Count != 0 || res.JobIDs == nil {
		t.Fatalf("second pause %+v", res)
	}
	res = decode[bulkResult](t, e.do("POST", "/v1/jobs/resume?label=team=payments&label=env=prod", nil))
	if res.Count != 1 || res.JobIDs[0] != p1 {
		t.Fatalf("resume %+v", res)
	}
	if j := decode[map[string]any](t, e.do("GET", fmt.Sprintf("/v1/jobs/%d", p1), nil)); j["enabled"] != true || j["next_run_at"] == nil {
		t.Fatalf("resumed job %v", j)
	}
	h := decode[historyPage](t, e.do("GET", fmt.Sprintf("/v1/jobs/%d/history", p1), nil))
	if len(h.Entries) != 3 || h.Entries[0].Action != "resume" || h.Entries[1].Action != "pause" {
		t.Fatalf("history %+v", h)
	}
	wantFields(t, e.do("POST", "/v1/jobs/pause", nil), "label")
	wantFields(t, e.do("POST", "/v1/jobs/pause?label=team", nil), "label")
	wantFields(t, e.do("POST", "/v1/jobs/resume?label=team=a&enabled=true", nil), "enabled")
	wantFields(t, e.do("POST", "/v1/jobs/pause?label=team=a", `{"x":1}`), "body")
}
