package http

import (
	nethttp "net/http"
	"strings"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
)

func TestSchedulePreviewEndpoint(t *testing.T) {
	e := parallelEnv(t)
	w := e.do("POST", "/v1/schedule/preview", map[string]any{"cron_expr": "0 3 * * *", "timezone": "Europe/Berlin",
		"count": 2, "after": "2026-12-03T12:00:00Z", "exclude": []map[string]string{{"from": "2026-12-05", "to": "2026-12-05"}}})
	wantStatus(t, w, nethttp.StatusOK)
	p := decode[chronos.Preview](t, w)
	if len(p.FireTimes) != 2 || p.FireTimes[0].Format(time.RFC3339) != "2026-12-04T02:00:00Z" ||
		p.FireTimes[1].Format(time.RFC3339) != "2026-12-06T02:00:00Z" || p.LocalTimes[0] != "2026-12-04T03:00:00+01:00" {
		t.Fatalf("preview %+v", p)
	}
	if !strings.HasPrefix(p.Description, "At 03:00 every day (Europe/Berlin)") {
		t.Fatalf("description %q", p.Description)
	}
	// Default count, from the database's clock.
	w = e.do("POST", "/v1/schedule/preview", map[string]any{"cron_expr": "@every 90s"})
	wantStatus(t, w, nethttp.StatusOK)
	if p = decode[chronos.Preview](t, w); len(p.FireTimes) != 10 || p.FireTimes[1].Sub(p.FireTimes[0]) != 90*time.Second {
		t.Fatalf("@every preview %+v", p)
	}
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"cron_expr": "0 0 30 2 *"}, "cron_expr"},
		{map[string]any{"cron_expr": "61 * * * *"}, "cron_expr"},
		{map[string]any{"cron_expr": "@every 1ms"}, "cron_expr"},
		{map[string]any{"timezone": "UTC"}, "cron_expr"},
		{map[string]any{"cron_expr": "* * * * *", "timezone": "Mars/Olympus"}, "timezone"},
		{map[string]any{"cron_expr": "* * * * *", "count": 101}, "count"},
		{map[string]any{"cron_expr": "* * * * *", "count": 0}, "count"},
		{map[string]any{"cron_expr": "* * * * *", "after": "yesterday"}, "after"},
		{map[string]any{"cron_expr": "* * * * *", "exclude": []map[string]string{{"from": "2026-12-05", "to": "2026-12-01"}}}, "exclude"},
		{map[string]any{"cron_expr": "* * * * *", "jitter_seconds": 60}, "jitter_seconds"},
		{map[string]any{"cron_expr": "* * * * *", "misfire": "twice"}, "misfire"},
		{map[string]any{"cron_expr": "* * * * *", "starts_at": "2027-01-01T00:00:00Z", "ends_at": "2026-01-01T00:00:00Z"}, "ends_at"},
		{map[string]any{"cron_expr": "* * * * *", "name": "x"}, "name"},
	} {
		wantFields(t, e.do("POST", "/v1/schedule/preview", tc.body), tc.field)
	}
}

func TestJobScheduleEndpoint(t *testing.T) {
	e := parallelEnv(t)
	body := cronJob("weekdays")
	body["cron_expr"], body["timezone"] = "30 9 * * 1-5", "America/New_York"
	j := e.createJob(body)
	path := "/v1/jobs/" + itoa64(j.ID) + "/schedule"
	w := e.do("GET", path+"?count=3&after=2026-12-04T00:00:00Z", nil) // a Friday
	wantStatus(t, w, nethttp.StatusOK)
	p := decode[chronos.Preview](t, w)
	want := []string{"2026-12-04T14:30:00Z", "2026-12-07T14:30:00Z", "2026-12-08T14:30:00Z"}
	for i, ft := range p.FireTimes {
		if ft.Format(time.RFC3339) != want[i] {
			t.Fatalf("fire times %v, want %v", p.FireTimes, want)
		}
	}
	if p.Description != "At 09:30 on Monday through Friday (America/New_York)" || p.LocalTimes[0] != "2026-12-04T09:30:00-05:00" {
		t.Fatalf("preview %+v", p)
	}
	// Default: 10 from now, starting at next_run_at.
	p = decode[chronos.Preview](t, e.do("GET", path, nil))
	if len(p.FireTimes) != 10 || !p.FireTimes[0].Equal(*j.NextRunAt) {
		t.Fatalf("default preview %v, next_run_at %v", p.FireTimes, j.NextRunAt)
	}
	// A paused job previews what it would do once resumed.
	wantStatus(t, e.do("PATCH", "/v1/jobs/"+itoa64(j.ID), map[string]any{"enabled": false}), nethttp.StatusOK)
	if q := decode[chronos.Preview](t, e.do("GET", path, nil)); len(q.FireTimes) != 10 {
		t.Fatalf("paused preview %v", q.FireTimes)
	}
	wantFields(t, e.do("GET", path+"?count=101", nil), "count")
	wantFields(t, e.do("GET", path+"?count=x", nil), "count")
	wantFields(t, e.do("GET", path+"?after=2026-12-04", nil), "after")
	wantFields(t, e.do("GET", path+"?limit=3", nil), "limit")
	wantStatus(t, e.do("GET", "/v1/jobs/999/schedule", nil), nethttp.StatusNotFound)
}

func TestJobPolicyFields(t *testing.T) {
	e := parallelEnv(t)
	body := cronJob("policies")
	body["cron_expr"] = "0 * * * *"
	body["starts_at"] = "2026-01-01T00:00:00Z"
	body["ends_at"] = "2036-01-01T00:00:00Z"
	body["misfire"] = "all"
	body["starting_deadline_seconds"] = 120
	body["jitter_seconds"] = 300
	body["exclude"] = []map[string]string{{"from": "2026-12-24", "to": "2026-12-26"}}
	j := e.createJob(body)
	if j.StartsAt == nil || j.EndsAt == nil || j.Misfire != chronos.MisfireAll || *j.StartingDeadlineSeconds != 120 ||
		j.JitterSeconds != 300 || len(j.Exclude) != 1 || j.State != chronos.StateScheduled {
		t.Fatalf("created %+v", j)
	}
	got := decode[map[string]any](t, e.do("GET", "/v1/jobs/"+itoa64(j.ID), nil))
	for _, k := range []string{"starts_at", "ends_at", "misfire", "starting_deadline_seconds", "jitter_seconds", "exclude", "state"} {
		if _, ok := got[k]; !ok {
			t.Fatalf("job lacks %q: %v", k, got)
		}
	}
	// Defaults.
	d := e.createJob(cronJob("defaults"))
	if d.Misfire != chronos.MisfireOne || d.StartingDeadlineSeconds != nil || d.JitterSeconds != 0 || d.Exclude == nil {
		t.Fatalf("defaults %+v", d)
	}
	// PATCH: null clears; ends_at in the past finishes the job.
	w := e.do("PATCH", "/v1/jobs/"+itoa64(j.ID), map[string]any{"starting_deadline_seconds": nil, "exclude": nil,
		"ends_at": "2026-01-02T00:00:00Z"})
	wantStatus(t, w, nethttp.StatusOK)
	p := decode[*chronos.Job](t, w)
	if p.StartingDeadlineSeconds != nil || len(p.Exclude) != 0 || p.NextRunAt != nil || p.State != chronos.StateFinished {
		t.Fatalf("patched %+v", p)
	}
	for field, value := range map[string]any{
		"starts_at":                 "soon",
		"ends_at":                   3,
		"misfire":                   "sometimes",
		"starting_deadline_seconds": 0,
		"jitter_seconds":            3601,
		"exclude":                   []map[string]string{{"from": "24 Dec", "to": "2026-12-26"}},
	} {
		b := cronJob("bad")
		b[field] = value
		wantFields(t, e.do("POST", "/v1/jobs", b), field)
		wantFields(t, e.do("PATCH", "/v1/jobs/"+itoa64(d.ID), map[string]any{field: value}), field)
	}
	// Start and end dates and exclusions are for cron jobs.
	one := map[string]any{"name": "once", "run_at": "2030-01-01T00:00:00Z", "target_url": "http://127.0.0.1:9/hook",
		"starts_at": "2029-01-01T00:00:00Z"}
	wantFields(t, e.do("POST", "/v1/jobs", one), "starts_at")
}

func TestRunsFilterMissed(t *testing.T) {
	e := parallelEnv(t)
	j := e.createJob(cronJob("missed"))
	wantStatus(t, e.do("GET", "/v1/jobs/"+itoa64(j.ID)+"/runs?status=missed", nil), nethttp.StatusOK)
}

// BenchmarkPreviewEndpoint100 is POST /v1/schedule/preview for 100 fire
// times through the router (issue 14: under 5 ms).
func BenchmarkPreviewEndpoint100(b *testing.B) {
	e := newEnv(b)
	body := map[string]any{"cron_expr": "0 9 * * 1-5", "timezone": "America/New_York", "count": 100,
		"after": "2026-10-31T00:00:00Z", "exclude": []map[string]string{{"from": "2026-12-24", "to": "2026-12-26"}}}
	for b.Loop() {
		if w := e.do("POST", "/v1/schedule/preview", body); w.Code != nethttp.StatusOK {
			b.Fatal(w.Body.String())
		}
	}
}
