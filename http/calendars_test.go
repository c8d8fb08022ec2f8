package http

import (
	nethttp "net/http"
	"strings"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
)

const holidaysICS = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\n" +
	"BEGIN:VEVENT\r\nUID:xmas\r\nDTSTAMP:20260101T000000Z\r\nSUMMARY:Christmas\r\nDTSTART;VALUE=DATE:20261225\r\nRRULE:FREQ=YEARLY;COUNT=2\r\nEND:VEVENT\r\n" +
	"END:VCALENDAR\r\n"

func TestCalendarsEndpoints(t *testing.T) {
	e := parallelEnv(t)
	tap := e.bus.Subscribe(16, func(ev chronos.Event) bool { return ev.Type == chronos.EventCalendarChanged })
	defer tap.Close()
	w := e.do("PUT", "/v1/calendars/us-holidays", map[string]any{"description": "US", "dates": []string{"2026-12-25", "2026-11-26"}})
	wantStatus(t, w, nethttp.StatusCreated)
	if c := decode[chronos.Calendar](t, w); len(c.Dates) != 2 || c.Dates[0] != "2026-11-26" {
		t.Fatalf("created %+v", c)
	}
	w = e.do("PUT", "/v1/calendars/xmas", map[string]any{"ical": holidaysICS})
	wantStatus(t, w, nethttp.StatusCreated)
	if c := decode[chronos.Calendar](t, w); strings.Join(c.Dates, " ") != "2026-12-25 2027-12-25" || c.ICal == nil {
		t.Fatalf("ical calendar %+v", c)
	}
	wantStatus(t, e.do("PUT", "/v1/calendars/xmas", map[string]any{"ical": holidaysICS}), nethttp.StatusOK)
	list := decode[calendarList](t, e.do("GET", "/v1/calendars", nil))
	if len(list.Calendars) != 2 || list.Calendars[0].Name != "us-holidays" {
		t.Fatalf("list %+v", list)
	}
	wantStatus(t, e.do("GET", "/v1/calendars/nope", nil), nethttp.StatusNotFound)
	for _, tc := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"ok", map[string]any{}, "dates"},
		{"ok", map[string]any{"dates": []string{"2026-12-25"}, "ical": holidaysICS}, "ical"},
		{"ok", map[string]any{"dates": []string{"25/12/2026"}}, "dates"},
		{"ok", map[string]any{"ical": "BEGIN:VCALENDAR\r\nEND"}, "ical"},
		{"ok", map[string]any{"dates": []string{}, "colour": "red"}, "colour"},
		{"Bad_Name", map[string]any{"dates": []string{}}, "name"},
	} {
		wantFields(t, e.do("PUT", "/v1/calendars/"+tc.name, tc.body), tc.field)
	}

	// A job names calendars; an unknown one is a 400 naming calendars.
	body := cronJob("payroll")
	body["cron_expr"], body["calendars"] = "0 9 * * 5", []string{"nope"}
	wantFields(t, e.do("POST", "/v1/jobs", body), "calendars")
	body["calendars"], body["calendar_policy"] = []string{"us-holidays", "xmas"}, "next_business_day"
	j := e.createJob(body)
	if len(j.Calendars) != 2 || j.CalendarPolicy != chronos.CalendarNextBusinessDay {
		t.Fatalf("job %+v", j)
	}
	got := decode[*chronos.Job](t, e.do("GET", "/v1/jobs/"+itoa64(j.ID), nil))
	if strings.Join(got.Calendars, ",") != "us-holidays,xmas" {
		t.Fatalf("stored calendars %v", got.Calendars)
	}
	// In use: 409.
	wantStatus(t, e.do("DELETE", "/v1/calendars/xmas", nil), nethttp.StatusConflict)

	// The preview shows the moved occurrence and its calendar.
	w = e.do("GET", "/v1/jobs/"+itoa64(j.ID)+"/schedule?count=2&after=2026-12-20T00:00:00Z", nil)
	wantStatus(t, w, nethttp.StatusOK)
	p := decode[chronos.Preview](t, w)
	if p.FireTimes[0].Format(time.RFC3339) != "2026-12-28T09:00:00Z" || len(p.Shifted) != 1 || p.Shifted[0].Calendar != "us-holidays" {
		t.Fatalf("preview %+v", p)
	}
	// POST /v1/schedule/preview takes calendars, and until.
	w = e.do("POST", "/v1/schedule/preview", map[string]any{"cron_expr": "0 9 * * *", "calendars": []string{"us-holidays"},
		"after": "2026-11-01T00:00:00Z", "until": "2026-12-31T23:59:59Z"})
	wantStatus(t, w, nethttp.StatusOK)
	p = decode[chronos.Preview](t, w)
	if len(p.FireTimes) != 59 || len(p.Skipped) != 2 || p.Skipped[0].Date != "2026-11-26" {
		t.Fatalf("preview until: %d fire times, skipped %+v", len(p.FireTimes), p.Skipped)
	}
	wantFields(t, e.do("POST", "/v1/schedule/preview", map[string]any{"cron_expr": "0 9 * * *", "calendars": []string{"nope"}}), "calendars")

	// Off the job, the calendar may go.
	wantStatus(t, e.do("PATCH", "/v1/jobs/"+itoa64(j.ID), map[string]any{"calendars": []string{"us-holidays"}}), nethttp.StatusOK)
	wantStatus(t, e.do("DELETE", "/v1/calendars/xmas", nil), nethttp.StatusNoContent)
	wantStatus(t, e.do("DELETE", "/v1/calendars/xmas", nil), nethttp.StatusNotFound)

	// The tap heard each write that took, and nothing of those refused.
	var heard []string
	for len(tap.C()) > 0 {
		ev := <-tap.C()
		heard = append(heard, ev.Op+" "+ev.Key)
	}
	if want := "put us-holidays,put xmas,put xmas,deleted xmas"; strings.Join(heard, ",") != want {
		t.Fatalf("calendar.changed events %q, want %q", heard, want)
	}
}

func TestBackfillEndpoint(t *testing.T) {
	e := parallelEnv(t)
	body := cronJob("hourly")
	body["cron_expr"] = "0 * * * *"
	j := e.createJob(body)
	path := "/v1/jobs/" + itoa64(j.ID) + "/backfill"
	now := time.Now().UTC().Truncate(time.Hour)
	from, to := now.Add(-5*time.Hour).Format(time.RFC3339), now.Format(time.RFC3339)

	w := e.do("POST", path, map[string]any{"from": from, "to": to, "dry_run": true})
	wantStatus(t, w, nethttp.StatusOK)
	if b := decode[chronos.Backfill](t, w); len(b.Occurrences) != 5 || len(b.Created) != 0 {
		t.Fatalf("dry run %+v", b)
	}
	req := newRequest("POST", path, strings.NewReader(`{"from":"`+from+`","to":"`+to+`"}`))
	req.Header.Set("Idempotency-Key", "backfill-1")
	req.Header.Set("Content-Type", "application/json")
	w = e.serve(req)
	wantStatus(t, w, nethttp.StatusAccepted)
	b := decode[chronos.Backfill](t, w)
	if len(b.Created) != 5 || b.Created[0].Trigger != chronos.TriggerBackfill || !b.Created[0].ScheduledAt.Before(b.Created[4].ScheduledAt) {
		t.Fatalf("backfill %+v", b)
	}
	// The same key replays the answer; the same range again creates nothing.
	req = newRequest("POST", path, strings.NewReader(`{"from":"`+from+`","to":"`+to+`"}`))
	req.Header.Set("Idempotency-Key", "backfill-1")
	req.Header.Set("Content-Type", "application/json")
	w = e.serve(req)
	wantStatus(t, w, nethttp.StatusAccepted)
	if w.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatal("not replayed")
	}
	w = e.do("POST", path, map[string]any{"from": from, "to": to})
	wantStatus(t, w, nethttp.StatusAccepted)
	if b := decode[chronos.Backfill](t, w); len(b.Created) != 0 || len(b.Existing) != 5 {
		t.Fatalf("again: %+v", b)
	}
	// More than 1,000 occurrences, or a to after now, are 400s naming to.
	minutely := cronJob("minutely")
	minutely["cron_expr"] = "* * * * *"
	m := e.createJob(minutely)
	wantFields(t, e.do("POST", "/v1/jobs/"+itoa64(m.ID)+"/backfill", map[string]any{"from": now.Add(-48 * time.Hour).Format(time.RFC3339), "to": to}), "to")
	wantFields(t, e.do("POST", path, map[string]any{"from": to, "to": from}), "to")
	wantFields(t, e.do("POST", path, map[string]any{"to": to}), "from")
	wantFields(t, e.do("POST", path, map[string]any{"from": from, "to": to, "extra": 1}), "extra")
	wantStatus(t, e.do("POST", "/v1/jobs/999999/backfill", map[string]any{"from": from, "to": to}), nethttp.StatusNotFound)
	// Audited.
	w = e.do("GET", "/v1/jobs/"+itoa64(j.ID)+"/history", nil)
	wantStatus(t, w, nethttp.StatusOK)
	if !strings.Contains(w.Body.String(), `"action":"backfill"`) {
		t.Fatalf("history %s", w.Body.String())
	}
}
