package http

import (
	nethttp "net/http"
	"testing"

	"github.com/chronoshq/chronos"
)

// TestDeletedJobs: a deleted job is found by the name it had, newest
// deletion first, with the id its history is kept under; a live job is
// not listed; the name is required.
func TestDeletedJobs(t *testing.T) {
	e := parallelEnv(t)
	first := e.createJob(cronJob("gone"))
	wantStatus(t, e.do("DELETE", "/v1/jobs/"+itoa64(first.ID), nil), nethttp.StatusNoContent)
	second := e.createJob(cronJob("gone")) // the name is free again
	e.createJob(cronJob("kept"))

	type page struct {
		Jobs []chronos.DeletedJob `json:"jobs"`
	}
	w := e.do("GET", "/v1/jobs/deleted?name=gone", nil)
	wantStatus(t, w, nethttp.StatusOK)
	if p := decode[page](t, w); len(p.Jobs) != 1 || p.Jobs[0].ID != first.ID || p.Jobs[0].Name != "gone" || p.Jobs[0].DeletedBy == "" || p.Jobs[0].DeletedAt.IsZero() {
		t.Fatalf("deleted jobs named gone: %+v", p.Jobs)
	}
	wantStatus(t, e.do("DELETE", "/v1/jobs/"+itoa64(second.ID), nil), nethttp.StatusNoContent)
	if p := decode[page](t, e.do("GET", "/v1/jobs/deleted?name=gone", nil)); len(p.Jobs) != 2 || p.Jobs[0].ID != second.ID || p.Jobs[1].ID != first.ID {
		t.Fatalf("two deletions, newest first: %+v", p.Jobs)
	}
	if p := decode[page](t, e.do("GET", "/v1/jobs/deleted?name=kept", nil)); p.Jobs == nil || len(p.Jobs) != 0 {
		t.Fatalf("a live job is not deleted: %+v", p.Jobs)
	}
	wantFields(t, e.do("GET", "/v1/jobs/deleted", nil), "name")
	// Its history is still there, under the id the lookup gave.
	wantStatus(t, e.do("GET", "/v1/jobs/"+itoa64(first.ID)+"/history", nil), nethttp.StatusOK)
}
