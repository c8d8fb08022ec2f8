package ui_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/chronoshq/chronos"
	apiclient "github.com/chronoshq/chronos/client"
	"github.com/chronoshq/chronos/reactor/reactortest"
)

// TestBrowserCalendarAndBackfill: in a real Chromium, the job page shows
// the job's calendar and what it skips; the edit form changes the
// calendar policy; the backfill form shows the dry run, creates nothing
// until its button is pressed, and then the runs, oldest first.
func TestBrowserCalendarAndBackfill(t *testing.T) {
	e := newEnv(t, false)
	api := apiClient(t, e)
	bg := context.Background()
	now := time.Now().UTC()
	tomorrow := now.AddDate(0, 0, 1).Format("2006-01-02")
	if _, err := api.PutCalendar(bg, "closures", apiclient.CalendarSpec{Dates: &[]string{tomorrow}}); err != nil {
		t.Fatal(err)
	}
	j := reactortest.CreateJob(t, e.in.DB, &chronos.Job{Name: "daily", CronExpr: ptr("0 6 * * *"), TargetURL: "http://127.0.0.1:9/x",
		Calendars: []string{"closures"}})
	id := strconv.FormatInt(j.ID, 10)
	ctx, blog := newBrowser(t, 1280, 900, false)
	base := e.srv.URL
	browserSignIn(t, ctx, base)

	run(t, ctx, "the job page shows the calendar",
		chromedp.Navigate(base+"/ui/jobs/"+id),
		until(`document.getElementById("job-calendars") && document.getElementById("job-calendars").textContent.includes("closures")`, 10*time.Second),
		until(`document.querySelector(".calendar-effects") && document.querySelector(".calendar-effects").textContent.includes("`+tomorrow+` is on closures")`, 5*time.Second))

	run(t, ctx, "the form sets the calendar policy",
		chromedp.Navigate(base+"/ui/jobs/"+id+"/edit"),
		chromedp.WaitVisible(css("#calendars")),
		until(`document.getElementById("calendars").value === "closures"`, 5*time.Second),
		setField("calendar_policy", "next_business_day"),
		chromedp.Click(css("form.form button.primary")),
		until(`location.pathname === "/ui/jobs/`+id+`" && document.getElementById("notice").textContent === "Saved."`, 10*time.Second))
	got, err := api.GetJob(bg, j.ID)
	if err != nil || got.CalendarPolicy != chronos.CalendarNextBusinessDay || len(got.Calendars) != 1 {
		t.Fatalf("after the form: %+v %v", got, err)
	}

	// The backfill: three past occurrences, shown before they are created.
	from := now.AddDate(0, 0, -3).Truncate(24 * time.Hour).Format("2006-01-02T15:04:05")
	to := now.Truncate(24 * time.Hour).Format("2006-01-02T15:04:05")
	run(t, ctx, "the backfill's dry run",
		setField("backfill-from", from),
		setField("backfill-to", to),
		chromedp.Click(css("#backfill-open")),
		until(`document.getElementById("backfill-dry-run") !== null`, 10*time.Second),
		until(`document.getElementById("backfill-create").textContent.includes("Create 3 run(s)")`, 5*time.Second))
	page, err := api.ListJobRuns(bg, j.ID, apiclient.RunFilter{})
	if err != nil || len(page.Runs) != 0 {
		t.Fatalf("the dry run created runs: %+v %v", page, err)
	}
	run(t, ctx, "the backfill",
		chromedp.Click(css("#backfill-create")),
		until(`location.pathname === "/ui/jobs/`+id+`" && document.getElementById("notice").textContent.startsWith("Backfilled")`, 10*time.Second))
	page, err = api.ListJobRuns(bg, j.ID, apiclient.RunFilter{})
	if err != nil || len(page.Runs) != 3 {
		t.Fatalf("backfilled runs: %+v %v", page, err)
	}
	for _, r := range page.Runs {
		if r.Trigger != chronos.TriggerBackfill {
			t.Fatalf("run %d has trigger %s", r.ID, r.Trigger)
		}
	}
	if errs := blog.Errors(); len(errs) > 0 {
		t.Fatalf("the page reported errors:\n%s", strings.Join(errs, "\n"))
	}
}
