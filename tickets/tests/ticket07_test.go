package tests

import (
	"context"
	"encoding/json"
	"fmt"
	nethttp "net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/chronoshq/chronos"
)

// TestTicket07Pagination: limit + cursor walk every job exactly once, in
// a stable (id) order, while other clients create and delete jobs; limit
// is capped at 500.
func TestTicket07Pagination(t *testing.T) {
	a := parallelAPI(t)

	// 1,000 jobs, made through the data layer in one batch to keep it
	// quick (one at a time, they were most of the test's time).
	const n = 1000
	jobs := make([]*chronos.Job, n)
	for i := range jobs {
		cron := "0 * * * *"
		jobs[i] = &chronos.Job{Name: fmt.Sprintf("walk-%d", i), CronExpr: &cron, TargetURL: "http://127.0.0.1:9/x", Enabled: true}
		jobs[i].ApplyDefaults()
	}
	if err := a.DB.CreateJobs(context.Background(), jobs); err != nil {
		t.Fatalf("create: %v", err)
	}
	initial := make([]int64, n)
	for i, j := range jobs {
		initial[i] = j.ID
	}

	// Churn during the walk: one client creates jobs, another deletes
	// some of the initial ones (every 7th), through the API.
	var mu sync.Mutex
	deleted := map[int64]bool{}
	stop := make(chan struct{})
	var churn sync.WaitGroup
	churn.Add(2)
	go func() {
		defer churn.Done()
		for i := 0; i < 300; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if r := a.call("POST", "/v1/jobs", apiJobBody("churn")); r.Status != nethttp.StatusCreated {
				t.Errorf("churn create: %d %s", r.Status, r.Body)
				return
			}
		}
	}()
	go func() {
		defer churn.Done()
		for i := 3; i < n; i += 7 {
			select {
			case <-stop:
				return
			default:
			}
			id := initial[i]
			mu.Lock()
			deleted[id] = true // counted before the call: it may vanish at any point of the walk
			mu.Unlock()
			if r := a.call("DELETE", "/v1/jobs/"+apiItoa(id), nil); r.Status != nethttp.StatusNoContent {
				t.Errorf("churn delete: %d %s", r.Status, r.Body)
				return
			}
		}
	}()

	seen := map[int64]bool{}
	var last int64
	cursor := ""
	pages := 0
	for {
		path := "/v1/jobs?limit=37"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		p := apiDecode[apiJobPage](t, a.call("GET", path, nil).want(t, nethttp.StatusOK))
		pages++
		if len(p.Jobs) > 37 {
			t.Fatalf("page of %d with limit=37", len(p.Jobs))
		}
		for _, j := range p.Jobs {
			if seen[j.ID] {
				t.Fatalf("job %d seen twice", j.ID)
			}
			if j.ID <= last {
				t.Fatalf("order not stable: %d after %d", j.ID, last)
			}
			seen[j.ID], last = true, j.ID
		}
		if p.NextCursor == nil {
			break
		}
		if pages > 200 {
			t.Fatal("walk does not end")
		}
		cursor = *p.NextCursor
	}
	close(stop)
	churn.Wait()

	missed := 0
	for _, id := range initial {
		if !seen[id] && !deleted[id] {
			missed++
			t.Errorf("job %d, present throughout, was never listed", id)
		}
	}
	if missed > 0 {
		t.Fatalf("%d jobs missed", missed)
	}
	t.Logf("walked %d pages, %d jobs; %d deleted during the walk", pages, len(seen), len(deleted))

	// The limit is capped at 500: a larger one is served, at most 500.
	p := apiDecode[apiJobPage](t, a.call("GET", "/v1/jobs?limit=5000", nil).want(t, nethttp.StatusOK))
	if len(p.Jobs) != 500 || p.NextCursor == nil {
		t.Fatalf("limit=5000 returned %d jobs (next %v), want 500 and a cursor", len(p.Jobs), p.NextCursor)
	}
	// The default is 50.
	p = apiDecode[apiJobPage](t, a.call("GET", "/v1/jobs", nil).want(t, nethttp.StatusOK))
	if len(p.Jobs) != 50 {
		t.Fatalf("default page of %d, want 50", len(p.Jobs))
	}
	wantInvalid(t, a.call("GET", "/v1/jobs?limit=0", nil), "limit")
	wantInvalid(t, a.call("GET", "/v1/jobs?limit=abc", nil), "limit")
	wantInvalid(t, a.call("GET", "/v1/jobs?cursor=not-a-cursor", nil), "cursor")
}

// TestTicket07NoJobBreaksTheWalk: no create or PATCH can store a job that
// a page cannot show. A run_at whose UTC year is outside 1-9999 (not
// writable as RFC 3339) and a payload nested deeper than JSON parsers
// accept are 400s naming the field, and every page still decodes.
func TestTicket07NoJobBreaksTheWalk(t *testing.T) {
	a := parallelAPI(t)
	shot := a.createJob(map[string]any{"name": "shot", "run_at": "2030-01-01T00:00:00Z", "target_url": "http://127.0.0.1:9/x"})
	a.createJob(apiJobBody("cron"))
	deep := json.RawMessage(strings.Repeat("[", 1000) + strings.Repeat("]", 1000))
	for field, bad := range map[string][]any{
		"run_at":  {"9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+01:00"},
		"payload": {deep},
	} {
		for _, v := range bad {
			body := map[string]any{"name": "bad", "run_at": "2030-01-01T00:00:00Z", "target_url": "http://127.0.0.1:9/x"}
			body[field] = v
			wantInvalid(t, a.call("POST", "/v1/jobs", body), field)
			wantInvalid(t, a.call("PATCH", "/v1/jobs/"+apiItoa(shot.ID), map[string]any{field: v}), field)
		}
	}
	p := apiDecode[apiJobPage](t, a.call("GET", "/v1/jobs?limit=1", nil).want(t, nethttp.StatusOK))
	for n := 1; p.NextCursor != nil; n++ {
		p = apiDecode[apiJobPage](t, a.call("GET", "/v1/jobs?limit=1&cursor="+url.QueryEscape(*p.NextCursor), nil).want(t, nethttp.StatusOK))
		if n > 2 {
			t.Fatalf("walk of 2 jobs goes on: %d pages", n+1)
		}
	}
	apiDecode[*chronos.Job](t, a.call("GET", "/v1/jobs/"+apiItoa(shot.ID), nil).want(t, nethttp.StatusOK))
}
