package http

import (
	"context"
	"fmt"
	nethttp "net/http"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// TestTriggerPublishesBeforeResponse: the run is on the local bus by the
// time the 202 is written, so the local dispatcher need not wait for NOTIFY.
func TestTriggerPublishesBeforeResponse(t *testing.T) {
	e := parallelEnv(t)
	j := e.createJob(cronJob("trig"))
	sub := e.bus.Subscribe(16, func(ev chronos.Event) bool { return ev.Type == chronos.EventRunChanged })
	defer sub.Close()
	w := e.do("POST", fmt.Sprintf("/v1/jobs/%d/trigger", j.ID), nil)
	wantStatus(t, w, nethttp.StatusAccepted)
	r := decode[*chronos.Run](t, w)
	select {
	case ev := <-sub.C():
		if ev.RunID != r.ID || ev.JobID != j.ID || ev.Status != chronos.StatusPending || ev.AvailableAt == nil || !ev.WakesDispatcher() {
			t.Fatalf("event %+v for run %+v", ev, r)
		}
	default:
		t.Fatal("no run.changed event on the bus when the response was written")
	}
	if r.Status != chronos.StatusPending || r.Trigger != chronos.TriggerManual || r.AvailableAt.Location() != time.UTC {
		t.Fatalf("run %+v", r)
	}
	wantFields(t, e.do("POST", fmt.Sprintf("/v1/jobs/%d/trigger", j.ID), `{"x":1}`), "body")
	wantStatus(t, e.do("POST", fmt.Sprintf("/v1/jobs/%d/trigger", j.ID), `{}`), nethttp.StatusAccepted)
}

// TestRunDetailAndRedrive: GET /v1/runs/{id} always has an attempts array;
// a dead run redrives into a new pending run (202, on the bus); anything
// else is a 409.
func TestRunDetailAndRedrive(t *testing.T) {
	e := parallelEnv(t)
	body := cronJob("redrive")
	body["max_retries"] = 0
	j := e.createJob(body)
	w := e.do("POST", fmt.Sprintf("/v1/jobs/%d/trigger", j.ID), nil)
	r := decode[*chronos.Run](t, w)

	w = e.do("GET", fmt.Sprintf("/v1/runs/%d", r.ID), nil)
	wantStatus(t, w, nethttp.StatusOK)
	if raw := decode[map[string]any](t, w); raw["attempts"] == nil {
		t.Fatalf("no attempts array before the first attempt: %s", w.Body.String())
	}
	w = e.do("POST", fmt.Sprintf("/v1/runs/%d/redrive", r.ID), nil)
	wantStatus(t, w, nethttp.StatusConflict)
	errorOf(t, w)

	ctx := context.Background()
	claimed, err := e.db.Claim(ctx, "w1", 1, time.Minute)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	now := time.Now()
	if _, err := e.db.Complete(ctx, []sql.Outcome{{Lease: claimed[0].Lease(), StatusCode: 503, Error: "HTTP 503", Body: "down", StartedAt: now, FinishedAt: now}}); err != nil {
		t.Fatal(err)
	}
	d := decode[runDetail](t, e.do("GET", fmt.Sprintf("/v1/runs/%d", r.ID), nil))
	if d.Status != chronos.StatusDead || len(d.Attempts) != 1 || d.Attempts[0].StatusCode == nil || *d.Attempts[0].StatusCode != 503 {
		t.Fatalf("dead run %+v attempts %+v", d.Run, d.Attempts)
	}

	sub := e.bus.Subscribe(16, nil)
	defer sub.Close()
	w = e.do("POST", fmt.Sprintf("/v1/runs/%d/redrive", r.ID), nil)
	wantStatus(t, w, nethttp.StatusAccepted)
	nr := decode[*chronos.Run](t, w)
	if nr.ID == r.ID || nr.Status != chronos.StatusPending || nr.Trigger != chronos.TriggerRedrive {
		t.Fatalf("redriven run %+v", nr)
	}
	select {
	case ev := <-sub.C():
		if ev.RunID != nr.ID {
			t.Fatalf("event %+v", ev)
		}
	default:
		t.Fatal("redrive not announced on the bus")
	}
	runs := decode[runList](t, e.do("GET", fmt.Sprintf("/v1/jobs/%d/runs", j.ID), nil))
	if len(runs.Runs) != 2 || runs.Runs[0].ID != nr.ID || runs.NextCursor != nil {
		t.Fatalf("runs newest first: %+v", runs)
	}
}
