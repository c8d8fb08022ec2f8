package ui_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/reactor/reactortest"
)

// The job page shows the job's calendars and what they do to its next
// fire times; the edit form keeps them; the backfill form shows the dry
// run and creates nothing until its button is pressed.
func TestJobPageCalendarsAndBackfill(t *testing.T) {
	e, c := signedIn(t, writeKey)
	ctx := context.Background()
	now := time.Now().UTC()
	tomorrow := now.AddDate(0, 0, 1).Format("2006-01-02")
	if _, err := e.in.DB.PutCalendar(ctx, &chronos.Calendar{Name: "closures", Dates: []string{tomorrow}}); err != nil {
		t.Fatal(err)
	}
	j := reactortest.CreateJob(t, e.in.DB, &chronos.Job{Name: "daily", CronExpr: ptr("0 6 * * *"), TargetURL: "http://127.0.0.1:9/x",
		Calendars: []string{"closures"}})
	base := "/ui/jobs/" + strconv.FormatInt(j.ID, 10)
	code, body := c.get(base)
	if code != http.StatusOK || !strings.Contains(body, `id="job-calendars"`) || !strings.Contains(body, "<code>closures</code>") {
		t.Fatalf("job page: %d\n%s", code, body)
	}
	if !strings.Contains(body, "skipped: "+tomorrow+" is on closures") {
		t.Fatalf("job page does not say the calendar skips %s:\n%s", tomorrow, body)
	}
	if _, body = c.get(base + "/edit"); !strings.Contains(body, `name="calendars" value="closures"`) {
		t.Fatalf("edit form:\n%s", body)
	}

	// The dry run.
	from := now.AddDate(0, 0, -3).Truncate(24 * time.Hour)
	q := url.Values{"from": {from.Format("2006-01-02T15:04:05")}, "to": {now.Truncate(24 * time.Hour).Format("2006-01-02T15:04:05")}}
	code, body = c.get(base + "/backfill?" + q.Encode())
	if code != http.StatusOK || !strings.Contains(body, `id="backfill-dry-run"`) || !strings.Contains(body, "Create 3 run(s)") {
		t.Fatalf("dry run: %d\n%s", code, body)
	}
	if runs := countRuns(t, e, j.ID); runs != 0 {
		t.Fatalf("the dry run created %d runs", runs)
	}
	m := regexpFind(body, `name="from" value="([^"]+)"`)
	n := regexpFind(body, `name="to" value="([^"]+)"`)
	code, loc, _ := c.post(base+"/backfill", url.Values{"from": {m}, "to": {n}})
	if code != http.StatusSeeOther || !strings.Contains(loc, "done=backfilled") {
		t.Fatalf("create: %d %s", code, loc)
	}
	if runs := countRuns(t, e, j.ID); runs != 3 {
		t.Fatalf("backfill created %d runs, want 3", runs)
	}
	// A bad range names its field.
	if code, body = c.get(base + "/backfill?from=yesterday"); code != http.StatusBadRequest || !strings.Contains(body, "from") {
		t.Fatalf("bad range: %d\n%s", code, body)
	}
}

func countRuns(t *testing.T, e *env, jobID int64) int {
	t.Helper()
	var n int
	if err := e.in.DB.Pool.QueryRow(context.Background(), "SELECT count(*) FROM job_runs WHERE job_id = $1", jobID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// regexpFind returns the first group of pattern's first match in s.
func regexpFind(s, pattern string) string {
	m := regexp.MustCompile(pattern).FindStringSubmatch(s)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}
