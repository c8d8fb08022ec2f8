package tests

import (
	"context"
	nethttp "net/http"
	"net/url"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// TestTicket04RunStatusFilter: GET /v1/jobs/{id}/runs?status=dead returns
// only dead runs, paginated; an unknown status is a 400 naming "status".
func TestTicket04RunStatusFilter(t *testing.T) {
	a := parallelAPI(t)
	body := apiJobBody("fails")
	body["max_retries"] = 0
	j := a.createJob(body)
	otherBody := apiJobBody("other")
	otherBody["max_retries"] = 0
	other := a.createJob(otherBody)
	runsPath := "/v1/jobs/" + apiItoa(j.ID) + "/runs"

	// 5 runs die (one attempt, max_retries 0), 2 succeed, 2 stay pending,
	// and a dead run of another job must not leak in.
	trigger := func(job *chronos.Job, n int) {
		for i := 0; i < n; i++ {
			r := apiDecode[*chronos.Run](t, a.call("POST", "/v1/jobs/"+apiItoa(job.ID)+"/trigger", nil).want(t, nethttp.StatusAccepted))
			if r.Status != chronos.StatusPending || r.JobID != job.ID || r.Trigger != chronos.TriggerManual {
				t.Fatalf("triggered run %+v", r)
			}
		}
	}
	ctx := context.Background()
	finish := func(n int, success bool) map[int64]bool {
		claimed, err := a.DB.Claim(ctx, "ticket04", n, 30*time.Second)
		if err != nil || len(claimed) != n {
			t.Fatalf("claim %d: %d runs, %v", n, len(claimed), err)
		}
		var outs []sql.Outcome
		ids := map[int64]bool{}
		for _, c := range claimed {
			if err := a.DB.Start(ctx, c.Lease()); err != nil {
				t.Fatalf("start: %v", err)
			}
			now := time.Now()
			o := sql.Outcome{Lease: c.Lease(), Success: success, StartedAt: now, FinishedAt: now, StatusCode: 200}
			if !success {
				o.StatusCode, o.Error = 500, "HTTP 500"
			}
			outs = append(outs, o)
			ids[c.Run.ID] = true
		}
		res, err := a.DB.Complete(ctx, outs)
		if err != nil {
			t.Fatalf("complete: %v", err)
		}
		for _, r := range res {
			want := chronos.StatusSucceeded
			if !success {
				want = chronos.StatusDead
			}
			if r.Err != nil || r.Status != want {
				t.Fatalf("complete result %+v, want %s", r, want)
			}
		}
		return ids
	}
	trigger(j, 5)
	dead := finish(5, false)
	trigger(other, 1)
	finish(1, false)
	trigger(j, 2)
	finish(2, true)
	trigger(j, 2)

	walk := func(status string) map[int64]bool {
		seen := map[int64]bool{}
		cursor := ""
		for pages := 0; ; pages++ {
			path := runsPath + "?limit=2&status=" + status
			if cursor != "" {
				path += "&cursor=" + url.QueryEscape(cursor)
			}
			p := apiDecode[apiRunPage](t, a.call("GET", path, nil).want(t, nethttp.StatusOK))
			if len(p.Runs) > 2 {
				t.Fatalf("page of %d runs with limit=2", len(p.Runs))
			}
			for _, r := range p.Runs {
				if string(r.Status) != status || r.JobID != j.ID {
					t.Fatalf("?status=%s returned run %+v", status, r)
				}
				if seen[r.ID] {
					t.Fatalf("run %d seen twice", r.ID)
				}
				seen[r.ID] = true
			}
			if p.NextCursor == nil {
				return seen
			}
			if pages > 10 {
				t.Fatal("pagination does not end")
			}
			cursor = *p.NextCursor
		}
	}
	gotDead := walk("dead")
	if len(gotDead) != len(dead) {
		t.Fatalf("dead runs %v, want %v", gotDead, dead)
	}
	for id := range dead {
		if !gotDead[id] {
			t.Fatalf("dead run %d missing", id)
		}
	}
	if n := len(walk("succeeded")); n != 2 {
		t.Fatalf("%d succeeded runs, want 2", n)
	}
	if n := len(walk("pending")); n != 2 {
		t.Fatalf("%d pending runs, want 2", n)
	}
	all := apiDecode[apiRunPage](t, a.call("GET", runsPath, nil).want(t, nethttp.StatusOK))
	if len(all.Runs) != 9 {
		t.Fatalf("%d runs unfiltered, want 9", len(all.Runs))
	}
	// Each dead run explains itself.
	for id := range dead {
		r := apiDecode[map[string]any](t, a.call("GET", "/v1/runs/"+apiItoa(id), nil).want(t, nethttp.StatusOK))
		atts, _ := r["attempts"].([]any)
		if r["status"] != "dead" || len(atts) != 1 {
			t.Fatalf("dead run %d: %v", id, r)
		}
		break
	}
	for _, bad := range []string{"exploded", "DEAD", "", "dead,pending"} {
		wantInvalid(t, a.call("GET", runsPath+"?status="+url.QueryEscape(bad), nil), "status")
	}
}
