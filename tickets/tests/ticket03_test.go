package tests

import (
	nethttp "net/http"
	"testing"
	"time"
)

// TestTicket03ScheduleXor: a create or PATCH that leaves a job with both
// cron_expr and run_at, or neither, is a 400 naming both fields, never a
// 500 from the database constraint.
func TestTicket03ScheduleXor(t *testing.T) {
	a := parallelAPI(t)
	runAt := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	base := func() map[string]any { return map[string]any{"name": "x", "target_url": "http://127.0.0.1:9/hook"} }

	both := base()
	both["cron_expr"], both["run_at"] = "0 * * * *", runAt
	wantInvalid(t, a.call("POST", "/v1/jobs", both), "cron_expr", "run_at")
	wantInvalid(t, a.call("POST", "/v1/jobs", base()), "cron_expr", "run_at")
	nulls := base()
	nulls["cron_expr"], nulls["run_at"] = nil, nil
	wantInvalid(t, a.call("POST", "/v1/jobs", nulls), "cron_expr", "run_at")

	cron := a.createJob(apiJobBody("cron"))
	oneShot := base()
	oneShot["run_at"] = runAt
	shot := a.createJob(oneShot)
	cronPath, shotPath := "/v1/jobs/"+apiItoa(cron.ID), "/v1/jobs/"+apiItoa(shot.ID)

	// Adding the other field without clearing the first: both.
	wantInvalid(t, a.call("PATCH", cronPath, map[string]any{"run_at": runAt}), "cron_expr", "run_at")
	wantInvalid(t, a.call("PATCH", shotPath, map[string]any{"cron_expr": "0 * * * *"}), "cron_expr", "run_at")
	wantInvalid(t, a.call("PATCH", cronPath, map[string]any{"cron_expr": "5 * * * *", "run_at": runAt}), "cron_expr", "run_at")
	// Clearing the only one: neither.
	wantInvalid(t, a.call("PATCH", cronPath, map[string]any{"cron_expr": nil}), "cron_expr", "run_at")
	wantInvalid(t, a.call("PATCH", shotPath, map[string]any{"run_at": nil}), "cron_expr", "run_at")
	wantInvalid(t, a.call("PATCH", cronPath, map[string]any{"cron_expr": nil, "run_at": nil}), "cron_expr", "run_at")

	// The refused updates changed nothing.
	got := apiDecode[map[string]any](t, a.call("GET", cronPath, nil).want(t, nethttp.StatusOK))
	if got["cron_expr"] != "*/10 * * * *" || got["run_at"] != nil {
		t.Fatalf("refused PATCH changed the job: %v", got)
	}

	// Switching properly works both ways.
	sw := apiDecode[map[string]any](t, a.call("PATCH", cronPath, map[string]any{"cron_expr": nil, "run_at": runAt}).want(t, nethttp.StatusOK))
	if sw["cron_expr"] != nil || sw["run_at"] != runAt || sw["next_run_at"] != runAt {
		t.Fatalf("switch to one-shot: %v", sw)
	}
	sw = apiDecode[map[string]any](t, a.call("PATCH", shotPath, map[string]any{"run_at": nil, "cron_expr": "0 * * * *"}).want(t, nethttp.StatusOK))
	if sw["cron_expr"] != "0 * * * *" || sw["run_at"] != nil || sw["next_run_at"] == nil {
		t.Fatalf("switch to cron: %v", sw)
	}
}
