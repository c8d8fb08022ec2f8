package tests

import (
	"encoding/json"
	"fmt"
	nethttp "net/http"
	"reflect"
	"testing"
	"time"
)

// TestTicket05PatchWithoutEnabled: PATCH {"cron_expr": ...} reschedules
// (next_run_at recomputed) and leaves enabled, and every other absent
// field, as it was.
func TestTicket05PatchWithoutEnabled(t *testing.T) {
	a := parallelAPI(t)
	for _, enabled := range []bool{true, false} {
		body := map[string]any{
			"name": fmt.Sprintf("full-%v", enabled), "cron_expr": "0 3 * * *", "timezone": "Europe/Berlin",
			"target_url": "http://127.0.0.1:9/full", "method": "PUT", "headers": map[string]string{"X-Env": "prod"},
			"payload": map[string]any{"report": "daily"}, "timeout_seconds": 12, "max_retries": 7,
			"backoff": "linear", "backoff_base_seconds": 3, "backoff_max_seconds": 90, "overlap": "skip",
			"enabled": enabled,
		}
		created := a.createJob(body)
		path := "/v1/jobs/" + apiItoa(created.ID)
		before := apiDecode[map[string]any](t, a.call("GET", path, nil).want(t, nethttp.StatusOK))

		after := apiDecode[map[string]any](t, a.call("PATCH", path, map[string]any{"cron_expr": "30 5 * * *"}).want(t, nethttp.StatusOK))
		if after["cron_expr"] != "30 5 * * *" {
			t.Fatalf("cron_expr not updated: %v", after)
		}
		if after["enabled"] != enabled {
			t.Fatalf("PATCH without enabled turned enabled=%v into %v", enabled, after["enabled"])
		}
		for k, v := range before {
			switch k {
			case "cron_expr", "next_run_at", "updated_at":
				continue
			}
			if !reflect.DeepEqual(after[k], v) {
				t.Fatalf("absent field %q changed: %v -> %v", k, v, after[k])
			}
		}
		// A GET shows what the PATCH returned.
		stored := apiDecode[map[string]any](t, a.call("GET", path, nil).want(t, nethttp.StatusOK))
		if !reflect.DeepEqual(stored, after) {
			t.Fatalf("stored %v\n  != returned %v", stored, after)
		}
		if enabled {
			// next_run_at is recomputed for the new schedule: 05:30 Berlin.
			next, err := time.Parse(time.RFC3339, stored["next_run_at"].(string))
			if err != nil {
				t.Fatalf("next_run_at %v: %v", stored["next_run_at"], err)
			}
			berlin, _ := time.LoadLocation("Europe/Berlin")
			if b := next.In(berlin); b.Hour() != 5 || b.Minute() != 30 || !next.After(time.Now()) || next.After(time.Now().Add(25*time.Hour)) {
				t.Fatalf("next_run_at %v (%v Berlin) is not the next 05:30 Berlin", next, b)
			}
		}
	}

	// Each field independently: changing one leaves the rest.
	j := a.createJob(apiJobBody("independent"))
	path := "/v1/jobs/" + apiItoa(j.ID)
	for _, patch := range []map[string]any{
		{"enabled": false}, {"target_url": "http://127.0.0.1:9/other"}, {"max_retries": 0},
		{"overlap": "queue_one"}, {"backoff": "linear"}, {"payload": json.RawMessage(`[1,2]`)}, {"enabled": true},
	} {
		before := apiDecode[map[string]any](t, a.call("GET", path, nil).want(t, nethttp.StatusOK))
		after := apiDecode[map[string]any](t, a.call("PATCH", path, patch).want(t, nethttp.StatusOK))
		for k, v := range before {
			// state is derived from enabled and next_run_at (issue 14).
			if _, patched := patch[k]; patched || k == "updated_at" || k == "next_run_at" || k == "state" {
				continue
			}
			if !reflect.DeepEqual(after[k], v) {
				t.Fatalf("PATCH %v changed %q: %v -> %v", patch, k, v, after[k])
			}
		}
	}

	// An empty PATCH is a no-op.
	before := a.call("GET", path, nil).want(t, nethttp.StatusOK)
	for _, empty := range []any{nil, "{}"} {
		got := a.call("PATCH", path, empty).want(t, nethttp.StatusOK)
		if string(got.Body) != string(before.Body) {
			t.Fatalf("empty PATCH changed the job:\n%s\n%s", before.Body, got.Body)
		}
	}
}

// TestTicket05OneShotKeepsItsRun: a one-shot whose run the leader created
// ahead keeps its one delivery through PATCHes that do not move it: pause
// then resume, or a time zone. The run created ahead is dropped by the
// pause, and the resume puts the occurrence back; a paused job shows no
// next run.
func TestTicket05OneShotKeepsItsRun(t *testing.T) {
	a := parallelAPI(t)
	ctx := t.Context()
	for _, patches := range [][]map[string]any{
		{{"enabled": false}, {"enabled": true}},
		{{"timezone": "Europe/Berlin"}},
	} {
		runAt := time.Now().UTC().Add(time.Hour).Truncate(time.Second)
		body := apiJobBody("one-shot")
		delete(body, "cron_expr")
		body["run_at"] = runAt.Format(time.RFC3339)
		j := a.createJob(body)
		path := "/v1/jobs/" + apiItoa(j.ID)
		// The leader's lookahead reaches run_at: its run is created ahead.
		if res, err := a.DB.Materialize(ctx, runAt.Add(-time.Second), 2*time.Second, 100); err != nil || res.Created < 1 {
			t.Fatalf("materialize ahead: %+v %v", res, err)
		}
		for _, p := range patches {
			got := apiDecode[map[string]any](t, a.call("PATCH", path, p).want(t, nethttp.StatusOK))
			if p["enabled"] == false && got["next_run_at"] != nil {
				t.Errorf("paused job shows next_run_at %v, want null", got["next_run_at"])
			}
		}
		if _, err := a.DB.Materialize(ctx, runAt.Add(time.Second), 2*time.Second, 100); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := a.DB.Pool.QueryRow(ctx, "SELECT count(*) FROM job_runs WHERE job_id = $1 AND scheduled_at = $2",
			j.ID, runAt).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("after %v: %d runs for the one-shot's run_at, want exactly 1", patches, n)
		}
	}
}

// TestTicket05PatchEndedSchedule: PATCH checks only what it changes. A
// cron job whose year-bounded schedule has ended (its last occurrence has
// fired) can still be paused, renamed, re-enabled or moved to another
// zone, and keeps next_run_at null; only a new cron_expr must fire again,
// as at create.
func TestTicket05PatchEndedSchedule(t *testing.T) {
	a := parallelAPI(t)
	body := apiJobBody("ended")
	body["cron_expr"] = "0 0 1 1 * 2020"
	wantInvalid(t, a.call("POST", "/v1/jobs", body), "cron_expr")
	body["cron_expr"] = "0 0 1 1 * 2099"
	j := a.createJob(body)
	// The years pass: 2099 is over.
	if _, err := a.DB.Pool.Exec(t.Context(), "WITH s AS (UPDATE job_schedules SET next_run_at = NULL WHERE job_id = $1) UPDATE jobs SET cron_expr = '0 0 1 1 * 2020' WHERE id = $1", j.ID); err != nil {
		t.Fatal(err)
	}
	path := "/v1/jobs/" + apiItoa(j.ID)
	for _, patch := range []map[string]any{
		{"enabled": false}, {"name": "renamed"}, {"enabled": true}, {"timezone": "Europe/Berlin"},
	} {
		got := apiDecode[map[string]any](t, a.call("PATCH", path, patch).want(t, nethttp.StatusOK))
		if got["next_run_at"] != nil {
			t.Fatalf("PATCH %v: next_run_at %v for an ended schedule", patch, got["next_run_at"])
		}
	}
	wantInvalid(t, a.call("PATCH", path, map[string]any{"cron_expr": "0 0 1 1 * 2021"}), "cron_expr")
	got := apiDecode[map[string]any](t, a.call("PATCH", path, map[string]any{"cron_expr": "0 3 * * *"}).want(t, nethttp.StatusOK))
	if got["next_run_at"] == nil {
		t.Fatal("new schedule without next_run_at")
	}
}
