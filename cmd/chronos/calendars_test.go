package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
)

func TestCLICalendarsAndBackfill(t *testing.T) {
	env := parallelAPIEnv(t)
	ics := filepath.Join(t.TempDir(), "xmas.ics")
	text := "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\nBEGIN:VEVENT\r\nUID:x\r\nDTSTAMP:20260101T000000Z\r\n" +
		"DTSTART;VALUE=DATE:20261225\r\nRRULE:FREQ=YEARLY;COUNT=3\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
	if err := os.WriteFile(ics, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := ok(t, env, "calendars", "apply", "xmas", "--ical", ics, "--description", "Christmas"); !strings.Contains(out, "2028-12-25") {
		t.Fatalf("apply ical:\n%s", out)
	}
	ok(t, env, "calendars", "apply", "closures", "--date", "2026-12-24,2026-12-31")
	if out := ok(t, env, "calendars", "list"); !strings.Contains(out, "closures") || !strings.Contains(out, "xmas") || !strings.Contains(out, "ical") {
		t.Fatalf("list:\n%s", out)
	}
	var cal chronos.Calendar
	if err := json.Unmarshal([]byte(ok(t, env, "calendars", "get", "closures", "-o", "json")), &cal); err != nil || len(cal.Dates) != 2 {
		t.Fatalf("get: %+v %v", cal, err)
	}
	if code, _, _ := cli(t, env, "", "calendars", "apply", "bad", "--date", "2026-12-24", "--ical", ics); code == 0 {
		t.Fatal("two sources accepted")
	}

	// A job on the calendars, and its backfill.
	ok(t, env, "jobs", "create", "--name", "daily", "--cron", "0 6 * * *", "--target", "http://127.0.0.1:9/x")
	from := time.Now().UTC().AddDate(0, 0, -4).Format("2006-01-02")
	out := ok(t, env, "jobs", "backfill", "daily", "--from", from, "--dry-run")
	if !strings.Contains(out, "dry run") || !strings.Contains(out, "would run") {
		t.Fatalf("backfill dry run:\n%s", out)
	}
	var b chronos.Backfill
	if err := json.Unmarshal([]byte(ok(t, env, "jobs", "backfill", "daily", "--from", from, "-o", "json")), &b); err != nil || len(b.Created) < 3 {
		t.Fatalf("backfill: %+v %v", b, err)
	}
	if out := ok(t, env, "jobs", "backfill", "daily", "--from", from); !strings.Contains(out, "0 run(s) created") {
		t.Fatalf("backfill again:\n%s", out)
	}
	if code, _, _ := cli(t, env, "", "jobs", "backfill", "daily"); code == 0 {
		t.Fatal("backfill without --from accepted")
	}

	// In use: delete refused.
	if code, out, errOut := cli(t, env, `{"calendars": ["closures"]}`, "jobs", "update", "daily", "-f", "-"); code != 0 {
		t.Fatalf("update: %d\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut := cli(t, env, "", "calendars", "delete", "closures"); code == 0 || !strings.Contains(errOut, "used by jobs") {
		t.Fatalf("delete in use: %d %s", code, errOut)
	}
	if code, _, _ := cli(t, env, `{"calendars": null}`, "jobs", "update", "daily", "-f", "-"); code != 0 {
		t.Fatal("update")
	}
	ok(t, env, "calendars", "delete", "closures")
}

func TestCLIApplyCalendars(t *testing.T) {
	env := parallelAPIEnv(t)
	manifest := `
kind: Calendar
name: us-holidays
description: US
dates: ["2026-12-25", "2027-01-01"]
---
- name: payroll
  cron_expr: "0 9 * * 5"
  target_url: http://127.0.0.1:9/pay
  calendars: [us-holidays]
  calendar_policy: next_business_day
`
	code, out, errOut := cli(t, env, manifest, "apply", "-f", "-", "--dry-run")
	if code != 0 || !strings.Contains(out, "+ create calendar us-holidays") || !strings.Contains(out, "+ create payroll") {
		t.Fatalf("dry run: %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut = cli(t, env, manifest, "apply", "-f", "-"); code != 0 {
		t.Fatalf("apply: %d\n%s\n%s", code, out, errOut)
	}
	if code, out, _ = cli(t, env, manifest, "apply", "-f", "-"); code != 0 || !strings.Contains(out, "no changes") {
		t.Fatalf("second apply: %d\n%s", code, out)
	}
	changed := strings.Replace(manifest, `"2027-01-01"`, `"2027-01-01", "2027-07-05"`, 1)
	if code, out, _ = cli(t, env, changed, "apply", "-f", "-"); code != 0 || !strings.Contains(out, "~ update calendar us-holidays (dates)") {
		t.Fatalf("changed dates: %d\n%s", code, out)
	}
	var j chronos.Job
	if err := json.Unmarshal([]byte(ok(t, env, "jobs", "get", "payroll", "-o", "json")), &j); err != nil || len(j.Calendars) != 1 || j.CalendarPolicy != chronos.CalendarNextBusinessDay {
		t.Fatalf("job: %+v %v", j, err)
	}
	// Prune: a calendar the files no longer list goes, after the jobs.
	ok(t, env, "calendars", "apply", "extra", "--date", "2026-01-01")
	labelled := strings.Replace(changed, "  calendars: [us-holidays]", "  labels: {team: pay}\n  calendars: [us-holidays]", 1)
	if code, out, errOut = cli(t, env, labelled, "apply", "-f", "-", "--prune", "--selector", "team=pay"); code != 0 || !strings.Contains(out, "- delete calendar extra") {
		t.Fatalf("prune: %d\n%s\n%s", code, out, errOut)
	}
	if code, _, _ := cli(t, env, "", "calendars", "get", "extra"); code == 0 {
		t.Fatal("extra survived the prune")
	}
	// A bad calendar refuses the lot.
	bad := "kind: Calendar\nname: Bad\ndates: [yesterday]\n"
	if code, _, errOut = cli(t, env, bad, "apply", "-f", "-"); code == 0 || !strings.Contains(errOut, "field dates") {
		t.Fatalf("bad calendar: %d %s", code, errOut)
	}
}
