package client_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chronoshq/chronos/client"
)

// TestNewEndpointShapes checks the client against the shapes of the
// endpoints issue 14 and 15 add (schedule previews, audit history, bulk
// pause), served here by a stub until they are on every server.
func TestNewEndpointShapes(t *testing.T) {
	t.Parallel()
	paused := 0
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/jobs/7/schedule", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("count") != "2" || r.URL.Query().Get("after") != "2026-12-03T00:00:00Z" {
			http.Error(w, `{"error":{"code":"invalid","message":"bad query"}}`, 400)
			return
		}
		_, _ = w.Write([]byte(`{"fire_times":["2026-12-04T02:00:00Z","2026-12-05T02:00:00Z"],"local_times":["2026-12-04T03:00:00+01:00","2026-12-05T03:00:00+01:00"],"description":"At 03:00"}`))
	})
	mux.HandleFunc("GET /v1/jobs/7/history", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"entries":[{"id":3,"job_id":7,"action":"pause","actor":"ops","at":"2026-12-03T10:00:00Z","run_id":null,"changes":{"enabled":{"before":true,"after":false}}}],"next_cursor":"abc"}`))
	})
	mux.HandleFunc("POST /v1/jobs/pause", func(w http.ResponseWriter, r *http.Request) {
		if got := r.URL.Query()["label"]; len(got) != 2 || got[0] != "env=prod" || got[1] != "team=payments" {
			http.Error(w, `{"error":{"code":"invalid","message":"labels"}}`, 400)
			return
		}
		paused++
		_ = json.NewEncoder(w).Encode(map[string]any{"job_ids": []int64{int64(paused)}, "count": 1, "more": paused < 2})
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	c, _ := client.New(ts.URL, "k", client.WithHTTPClient(ts.Client()))
	ctx := ctx(t)

	s, err := c.JobSchedule(ctx, 7, 2, time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC))
	if err != nil || len(s.FireTimes) != 2 || s.LocalTimes[0] != "2026-12-04T03:00:00+01:00" || s.Description != "At 03:00" {
		t.Fatalf("JobSchedule: %+v, %v", s, err)
	}
	h, err := c.JobHistory(ctx, 7, 10, "")
	if err != nil || len(h.Entries) != 1 || h.Entries[0].Actor != "ops" || h.Entries[0].Action != "pause" || h.NextCursor != "abc" || h.Entries[0].Changes["enabled"] == nil {
		t.Fatalf("JobHistory: %+v, %v", h, err)
	}
	if b, _ := json.Marshal(h.Entries[0]); !json.Valid(b) || len(b) < 50 {
		t.Fatalf("history entry re-marshals as %s", b)
	}
	sel, _ := client.ParseSelector("team=payments,env=prod")
	r, err := c.PauseJobs(ctx, sel)
	if err != nil || r.Count != 1 || !r.More || r.JobIDs[0] != 1 {
		t.Fatalf("PauseJobs: %+v, %v", r, err)
	}
	// Absent endpoints answer with the API's error, as the CLI prints it.
	if _, err := c.ResumeJobs(ctx, sel); client.Code(err) != "not_found" && client.Code(err) != "method_not_allowed" {
		t.Fatalf("absent endpoint: %v", err)
	}
}
