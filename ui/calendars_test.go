package ui_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/reactor/reactortest"
)

// calendarEvent waits for the next calendar.changed on the tap.
func calendarEvent(t *testing.T, c <-chan chronos.Event) chronos.Event {
	t.Helper()
	select {
	case ev := <-c:
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no calendar.changed event")
	}
	return chronos.Event{}
}

// The calendars page lists every calendar with its next dates and how many
// jobs name it; its form creates and replaces a calendar through the
// API's validation (a bad date is a 400 naming it, and changes nothing);
// a calendar in use is not deleted (409 naming its jobs), one not in use
// is; each change is published as the API publishes it.
func TestCalendarsPage(t *testing.T) {
	e, c := signedIn(t, writeKey)
	ctx := context.Background()
	tap := e.in.Bus.Subscribe(16, func(ev chronos.Event) bool { return ev.Type == chronos.EventCalendarChanged })
	defer tap.Close()
	day := func(n int) string { return time.Now().UTC().AddDate(0, 0, n).Format(time.DateOnly) }
	dates := []string{"2020-01-01"}
	for n := 1; n <= 7; n++ {
		dates = append(dates, day(n))
	}
	if _, err := e.in.DB.PutCalendar(ctx, &chronos.Calendar{Name: "us-holidays", Description: "Federal holidays", Dates: dates}); err != nil {
		t.Fatal(err)
	}
	reactortest.CreateJob(t, e.in.DB, &chronos.Job{Name: "payroll", CronExpr: ptr("0 9 * * 5"), TargetURL: "http://127.0.0.1:9/x",
		Calendars: []string{"us-holidays"}})

	code, body := c.get("/ui/calendars")
	row := regexpFind(body, `(?s)(<tr id="calendar-us-holidays">.*?</tr>)`)
	if code != http.StatusOK || !strings.Contains(body, `href="/ui/calendars" aria-current="page"`) || !strings.Contains(body, `id="calendar-form"`) ||
		!strings.Contains(row, "<code>us-holidays</code>") || !strings.Contains(row, "Federal holidays") || !strings.Contains(row, `data-label="Dates">8<`) ||
		!strings.Contains(row, `>`+day(1)+`</time>`) || !strings.Contains(row, `>`+day(5)+`</time>`) || strings.Contains(row, day(6)) ||
		strings.Contains(row, "2020-01-01") || !strings.Contains(row, "and 2 more") || !strings.Contains(row, "1 job<") {
		t.Fatalf("calendars page: %d\n%s", code, body)
	}

	// Create, then replace; the form's dates are read as the API reads
	// them: sorted, without duplicates.
	for _, tc := range []struct{ dates, done string }{
		{"2030-12-25, 2030-01-01\r\n\r\n2030-05-01\n2030-01-01", "calendar-created"},
		{"2031-01-01", "calendar-saved"},
	} {
		code, loc, body := c.post("/ui/calendars", url.Values{"name": {"eu-closures"}, "description": {"EU office"}, "dates": {tc.dates}})
		if code != http.StatusSeeOther || loc != "/ui/calendars?done="+tc.done {
			t.Fatalf("save %q: %d to %q\n%s", tc.dates, code, loc, body)
		}
		if ev := calendarEvent(t, tap.C()); ev.Op != "put" || ev.Key != "eu-closures" {
			t.Fatalf("save %q published %+v", tc.dates, ev)
		}
	}
	got, err := e.in.DB.Calendar(ctx, "eu-closures")
	if err != nil || got.Description != "EU office" || !slices.Equal(got.Dates, []string{"2031-01-01"}) {
		t.Fatalf("after replacing: %+v, %v", got, err)
	}
	if _, body = c.get("/ui/calendars?done=calendar-saved"); !strings.Contains(body, "Calendar saved") {
		t.Fatalf("no notice after saving:\n%s", body)
	}
	if _, body = c.get("/ui/calendars?edit=eu-closures"); !strings.Contains(body, `value="EU office"`) || !strings.Contains(body, ">2031-01-01</textarea>") {
		t.Fatalf("the edit link does not fill the form:\n%s", body)
	}

	// A bad date or name is a 400 that names it, with the form as typed.
	code, _, body = c.post("/ui/calendars", url.Values{"name": {"eu-closures"}, "dates": {"2030-01-01\n2030-02-30"}})
	if code != http.StatusBadRequest || !strings.Contains(body, `&#34;2030-02-30&#34; must be a date, YYYY-MM-DD`) || !strings.Contains(body, "2030-01-01\n2030-02-30</textarea>") {
		t.Fatalf("a bad date: %d\n%s", code, body)
	}
	code, _, body = c.post("/ui/calendars", url.Values{"name": {"Bad_Name"}, "dates": {"2030-01-01"}})
	if code != http.StatusBadRequest || !strings.Contains(body, "lower-case letters") {
		t.Fatalf("a bad name: %d\n%s", code, body)
	}
	if got, _ := e.in.DB.Calendar(ctx, "eu-closures"); !slices.Equal(got.Dates, []string{"2031-01-01"}) {
		t.Fatalf("a refused save changed the calendar: %v", got.Dates)
	}

	// Delete: refused while a job names it, done when none does.
	code, _, body = c.post("/ui/calendars/us-holidays/delete", nil)
	if code != http.StatusConflict || !strings.Contains(body, "is used by jobs: payroll") || !strings.Contains(body, `id="calendar-us-holidays"`) {
		t.Fatalf("deleting a calendar in use: %d\n%s", code, body)
	}
	if _, err := e.in.DB.Calendar(ctx, "us-holidays"); err != nil {
		t.Fatalf("the refused delete lost the calendar: %v", err)
	}
	code, loc, _ := c.post("/ui/calendars/eu-closures/delete", nil)
	if code != http.StatusSeeOther || loc != "/ui/calendars?done=calendar-deleted" {
		t.Fatalf("delete: %d to %q", code, loc)
	}
	if ev := calendarEvent(t, tap.C()); ev.Op != "deleted" || ev.Key != "eu-closures" {
		t.Fatalf("delete published %+v", ev)
	}
	if _, err := e.in.DB.Calendar(ctx, "eu-closures"); chronos.ErrorCode(err) != chronos.ENOTFOUND {
		t.Fatalf("after delete: %v", err)
	}
	if code, _, _ = c.post("/ui/calendars/eu-closures/delete", nil); code != http.StatusNotFound {
		t.Fatalf("deleting it again: %d", code)
	}
}

// A read key sees the calendars and no control, and its forms sent
// anyway are refused.
func TestCalendarsPageReadOnly(t *testing.T) {
	e, c := signedIn(t, readKey)
	ctx := context.Background()
	if _, err := e.in.DB.PutCalendar(ctx, &chronos.Calendar{Name: "closures", Dates: []string{"2030-01-01"}}); err != nil {
		t.Fatal(err)
	}
	code, body := c.get("/ui/calendars?edit=closures")
	if code != http.StatusOK || !strings.Contains(body, "<code>closures</code>") || strings.Contains(body, `id="calendar-form"`) ||
		strings.Contains(body, "/delete") || strings.Contains(body, "?edit=") {
		t.Fatalf("read-only calendars page: %d\n%s", code, body)
	}
	if code, _, _ := c.post("/ui/calendars", url.Values{"name": {"new"}, "dates": {"2030-01-01"}}); code != http.StatusForbidden {
		t.Fatalf("a reader's save: %d", code)
	}
	if code, _, _ := c.post("/ui/calendars/closures/delete", nil); code != http.StatusForbidden {
		t.Fatalf("a reader's delete: %d", code)
	}
	if cs, _ := e.in.DB.Calendars(ctx); len(cs) != 1 || cs[0].Name != "closures" {
		t.Fatalf("a reader changed the calendars: %+v", cs)
	}
}

// TestBrowserCalendarsPage: in a real Chromium, the calendars page's form
// creates a calendar, which the list then shows, and its delete button
// deletes it.
func TestBrowserCalendarsPage(t *testing.T) {
	e := newEnv(t, false)
	ctx, blog := newBrowser(t, 1280, 900, false)
	base := e.srv.URL
	browserSignIn(t, ctx, base)
	row := `document.getElementById("calendar-office-closures")`
	run(t, ctx, "create a calendar",
		chromedp.Navigate(base+"/ui/calendars"),
		retryStale(chromedp.WaitVisible(css("#calendar-form"))),
		setField("name", "office-closures"),
		setField("description", "Office closed"),
		setField("dates", "2030-12-24\n2030-12-25, 2030-12-31"),
		click("#calendar-form button.primary"),
		until(`document.getElementById("notice").textContent === "Calendar created." && `+row+` !== null && `+
			row+`.textContent.includes("Office closed")`, 10*time.Second))
	got, err := e.in.DB.Calendar(t.Context(), "office-closures")
	if err != nil || !slices.Equal(got.Dates, []string{"2030-12-24", "2030-12-25", "2030-12-31"}) {
		t.Fatalf("the form saved %+v, %v", got, err)
	}
	run(t, ctx, "delete it",
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := js[bool](`(window.confirm = () => true, true)`)(ctx, tg)
			return err
		}),
		click("#calendar-office-closures button.danger"),
		until(`document.getElementById("notice").textContent === "Calendar deleted." && `+row+` === null`, 10*time.Second))
	if _, err := e.in.DB.Calendar(t.Context(), "office-closures"); chronos.ErrorCode(err) != chronos.ENOTFOUND {
		t.Fatalf("after the delete button: %v", err)
	}
	if errs := blog.Errors(); len(errs) > 0 {
		t.Errorf("the browser reported errors:\n%s", strings.Join(errs, "\n"))
	}
}
