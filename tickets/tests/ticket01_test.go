package tests

import (
	nethttp "net/http"
	"net/url"
	"testing"
)

// TestTicket01EnabledFilter: GET /v1/jobs?enabled=true|false returns only
// those jobs (across pages); an invalid value is a 400 naming "enabled".
func TestTicket01EnabledFilter(t *testing.T) {
	a := parallelAPI(t)
	want := map[bool]map[int64]bool{true: {}, false: {}}
	for i := 0; i < 7; i++ {
		body := apiJobBody("j")
		enabled := i%3 != 0
		if !enabled {
			body["enabled"] = false
		}
		j := a.createJob(body)
		if j.Enabled != enabled {
			t.Fatalf("created enabled=%v, want %v", j.Enabled, enabled)
		}
		want[enabled][j.ID] = true
	}
	// A job disabled after creation counts as disabled.
	j := a.createJob(apiJobBody("later-disabled"))
	a.call("PATCH", "/v1/jobs/"+apiItoa(j.ID), map[string]any{"enabled": false}).want(t, nethttp.StatusOK)
	want[false][j.ID] = true

	walk := func(q string) map[int64]bool {
		seen := map[int64]bool{}
		cursor := ""
		for pages := 0; ; pages++ {
			path := "/v1/jobs?limit=2" + q
			if cursor != "" {
				path += "&cursor=" + url.QueryEscape(cursor)
			}
			p := apiDecode[apiJobPage](t, a.call("GET", path, nil).want(t, nethttp.StatusOK))
			for _, j := range p.Jobs {
				seen[j.ID] = j.Enabled
				if q == "&enabled=true" && !j.Enabled || q == "&enabled=false" && j.Enabled {
					t.Fatalf("%s returned job %d with enabled=%v", q, j.ID, j.Enabled)
				}
			}
			if p.NextCursor == nil || pages > 20 {
				return seen
			}
			cursor = *p.NextCursor
		}
	}
	for _, enabled := range []bool{true, false} {
		q := "&enabled=true"
		if !enabled {
			q = "&enabled=false"
		}
		got := walk(q)
		if len(got) != len(want[enabled]) {
			t.Fatalf("%s: got %d jobs %v, want %v", q, len(got), got, want[enabled])
		}
		for id := range want[enabled] {
			if _, ok := got[id]; !ok {
				t.Fatalf("%s: job %d missing", q, id)
			}
		}
	}
	if all := walk(""); len(all) != 8 {
		t.Fatalf("unfiltered: %d jobs, want 8", len(all))
	}
	for _, bad := range []string{"yes", "1", "TRUE", "", "truee", "true,false"} {
		wantInvalid(t, a.call("GET", "/v1/jobs?enabled="+url.QueryEscape(bad), nil), "enabled")
	}
	wantInvalid(t, a.call("GET", "/v1/jobs?enabled=true&enabled=false", nil), "enabled")
}
