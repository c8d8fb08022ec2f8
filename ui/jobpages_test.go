package ui_test

import (
	"context"
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

var jobRowRE = regexp.MustCompile(`<tr id="job-(\d+)">`)

// listedJobs returns the ids of the jobs a job list page shows.
func listedJobs(body string) []int64 { return listedIDs(jobRowRE, body) }

// listedIDs returns the ids (re's first group) of the rows a list page
// shows, in order.
func listedIDs(re *regexp.Regexp, body string) []int64 {
	var ids []int64
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		id, _ := strconv.ParseInt(m[1], 10, 64)
		ids = append(ids, id)
	}
	return ids
}

func TestJobListSearchAndLabelFilters(t *testing.T) {
	e, c := signedIn(t, writeKey)
	mk := func(name, desc string, labels map[string]string, enabled bool) int64 {
		j := reactortest.CreateJob(t, e.in.DB, &chronos.Job{Name: name, Description: desc, Labels: labels, CronExpr: ptr("0 3 * * *"), TargetURL: "http://127.0.0.1:9/x"})
		if !enabled {
			if _, err := e.in.DB.UpdateJob(context.Background(), j.ID, &chronos.JobUpdate{Enabled: chronos.Some(false)}); err != nil {
				t.Fatal(err)
			}
		}
		return j.ID
	}
	billing := mk("billing-sync", "Settles invoices", map[string]string{"team": "payments", "env": "prod"}, true)
	billingStg := mk("billing-sync-staging", "", map[string]string{"team": "payments", "env": "staging"}, false)
	report := mk("nightly-report", "Mails the billing summary", map[string]string{"team": "data", "env": "prod"}, true)
	for query, want := range map[string][]int64{
		"":                                       {billing, billingStg, report},
		"name_prefix=billing":                    {billing, billingStg},
		"name_prefix=billing-sync-":              {billingStg},
		"q=BILLING":                              {billing, billingStg, report}, // name or description, any case
		"q=invoice":                              {billing},
		"label=env%3Dprod":                       {billing, report},
		"label=env%3Dprod+team%3Dpayments":       {billing}, // several in one field
		"label=env%3Dprod&label=team%3Dpayments": {billing}, // or repeated
		"label=team%3Dpayments&enabled=false":    {billingStg},
		"name_prefix=billing&enabled=true":       {billing},
		"label=env%3Dnowhere":                    {},
	} {
		code, body := c.get("/ui/jobs?" + query)
		got := listedJobs(body)
		if code != http.StatusOK || len(got) != len(want) {
			t.Errorf("GET /ui/jobs?%s: %d, jobs %v, want %v", query, code, got, want)
			continue
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("GET /ui/jobs?%s: jobs %v, want %v", query, got, want)
				break
			}
		}
	}
	// The form shows the filters back, and each label links to its filter.
	_, body := c.get("/ui/jobs?name_prefix=billing&label=env%3Dprod")
	if !strings.Contains(body, `id="name_prefix" name="name_prefix" value="billing"`) || !strings.Contains(body, `id="label" name="label" value="env=prod"`) {
		t.Error("the search form does not show the filters back")
	}
	if !strings.Contains(body, `href="/ui/jobs?label=team%3dpayments"`) {
		t.Error("a job's label does not link to the jobs with that label")
	}
	// A selector that does not parse is a 400 that names the problem.
	code, body := c.get("/ui/jobs?label=" + url.QueryEscape("env"))
	if code != http.StatusBadRequest || !strings.Contains(body, "must be key=value") {
		t.Errorf("GET /ui/jobs?label=env: %d, want 400 saying key=value", code)
	}
	// Paging keeps the filters.
	for i := range 55 {
		mk("bulk-"+strconv.Itoa(i), "", map[string]string{"env": "dev"}, true)
	}
	_, body = c.get("/ui/jobs?label=env%3Ddev")
	m := regexp.MustCompile(`href="(/ui/jobs\?[^"]*)">Next page`).FindStringSubmatch(body)
	if m == nil || !strings.Contains(m[1], "label=env%3Ddev") {
		t.Fatalf("the next page link %v does not keep the label filter", m)
	}
	if _, body := c.get(strings.ReplaceAll(m[1], "&amp;", "&")); len(listedJobs(body)) != 5 {
		t.Errorf("the second page of env=dev lists %d jobs, want 5", len(listedJobs(body)))
	}
}

func TestJobPageShowsFireTimesAndHistory(t *testing.T) {
	e, c := signedIn(t, writeKey)
	j := reactortest.CreateJob(t, e.in.DB, &chronos.Job{Name: "nightly", CronExpr: ptr("30 2 * * *"), Timezone: "America/New_York", TargetURL: "http://127.0.0.1:9/x"})
	id := strconv.FormatInt(j.ID, 10)
	_, body := c.get("/ui/jobs/" + id)
	// Ten fire times, in the zone and in UTC, as GET /v1/jobs/{id}/schedule.
	now, _ := e.in.DB.Now(context.Background())
	p, err := j.Preview(now, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, ft := range p.FireTimes {
		local := ft.In(j.Location()).Format("Mon 2006-01-02 15:04:05 MST")
		if !strings.Contains(body, local) || !strings.Contains(body, ft.UTC().Format("2006-01-02 15:04:05Z")) {
			t.Errorf("the job page does not show the fire time %s (%s)", ft, local)
		}
	}
	if n := strings.Count(body, `<td><time datetime=`); n < 10 {
		t.Errorf("the job page shows %d fire times, want 10", n)
	}
	// Pause from the console, edit from the console: the history says who,
	// what, before and after.
	if code, _, _ := c.post("/ui/jobs/"+id+"/pause", url.Values{"back": {"/ui/jobs/" + id}}); code != http.StatusSeeOther {
		t.Fatalf("pause: %d", code)
	}
	form := url.Values{"name": {"nightly-v2"}, "kind": {"cron"}, "cron_expr": {"45 2 * * *"}, "timezone": {"America/New_York"},
		"method": {"POST"}, "target_url": {"http://127.0.0.1:9/x"}, "timeout_seconds": {"30"}, "max_retries": {"3"},
		"backoff": {"exponential"}, "backoff_base_seconds": {"2"}, "backoff_max_seconds": {"600"}, "overlap": {"allow"},
		"labels": {"team=data env=prod"}, "description": {"Sends the nightly report"}}
	if code, _, body := c.post("/ui/jobs/"+id, form); code != http.StatusSeeOther {
		t.Fatalf("edit: %d\n%s", code, body)
	}
	got, _ := e.in.DB.Job(context.Background(), j.ID)
	if got.Labels["team"] != "data" || got.Labels["env"] != "prod" || got.Description != "Sends the nightly report" {
		t.Fatalf("the form saved labels %v and description %q", got.Labels, got.Description)
	}
	_, body = c.get("/ui/jobs/" + id)
	hist := body[strings.Index(body, `id="history"`):]
	for _, want := range []string{"<td>ops</td>", "<td>pause</td>", "<td>update</td>", "<td>create</td>",
		"<code>enabled</code>: <del>true</del> → <ins>false</ins>",
		"<code>cron_expr</code>: <del>30 2 * * *</del> → <ins>45 2 * * *</ins>",
		"<code>name</code>: <del>nightly</del> → <ins>nightly-v2</ins>"} {
		if !strings.Contains(hist, want) {
			t.Errorf("the history does not show %q:\n%s", want, hist)
		}
	}
	if !strings.Contains(body, "Paused: these are the times it would fire once resumed.") {
		t.Error("the job page does not say a paused job's fire times are for after resuming")
	}
	// The history pages.
	for range 20 {
		if _, err := e.in.DB.UpdateJob(chronos.WithActor(context.Background(), "robot"), j.ID, &chronos.JobUpdate{Enabled: chronos.Some(!got.Enabled)}); err != nil {
			t.Fatal(err)
		}
		got.Enabled = !got.Enabled
	}
	_, body = c.get("/ui/jobs/" + id)
	m := regexp.MustCompile(`href="(/ui/jobs/\d+\?hcursor=[^"#]*)#history">Older history`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no link to older history")
	}
	if _, body := c.get(m[1]); !strings.Contains(body, "<td>create</td>") {
		t.Error("the second page of history does not reach the create")
	}
}

func TestSchedulePreviewAsYouType(t *testing.T) {
	e, c := signedIn(t, writeKey)
	hx := map[string]string{"HX-Request": "true"}
	preview := func(v url.Values) (int, string) {
		code, _, body := c.do("GET", "/ui/schedule/preview?"+v.Encode(), nil, hx)
		return code, body
	}
	for _, tc := range []struct {
		expr, zone string
		want       []string
	}{
		{"61 * * * *", "UTC", []string{"This schedule does not work", "cron_expr: "}},
		{"0 0 30 2 *", "UTC", []string{"cron_expr: ", "again"}},
		{"0 3 * * *", "Mars/Olympus", []string{"timezone: "}},
		{"", "UTC", []string{"Type a cron expression"}},
		{"30 2 * * *", "America/New_York", []string{"the next 10 fire times", "In America/New_York", "EST"}},
	} {
		code, body := preview(url.Values{"cron_expr": {tc.expr}, "timezone": {tc.zone}, "kind": {"cron"}})
		if code != http.StatusOK {
			t.Errorf("preview %q in %s: %d", tc.expr, tc.zone, code)
		}
		for _, w := range tc.want {
			if !strings.Contains(body, w) {
				t.Errorf("preview %q in %s does not say %q:\n%s", tc.expr, tc.zone, w, body)
			}
		}
		if strings.Contains(body, "<html") {
			t.Errorf("preview %q is a whole page, want a fragment", tc.expr)
		}
	}
	// Editing a job, its policies apply: an end date before every
	// occurrence leaves none.
	j := reactortest.CreateJob(t, e.in.DB, &chronos.Job{Name: "j", CronExpr: ptr("0 3 * * *"), TargetURL: "http://127.0.0.1:9/x"})
	now, _ := e.in.DB.Now(context.Background())
	end := now.Add(36e11) // in an hour
	if _, err := e.in.DB.UpdateJob(context.Background(), j.ID, &chronos.JobUpdate{EndsAt: chronos.Some(end)}); err != nil {
		t.Fatal(err)
	}
	_, body := preview(url.Values{"cron_expr": {"0 0 1 1 *"}, "timezone": {"UTC"}, "job": {strconv.FormatInt(j.ID, 10)}})
	if !strings.Contains(body, "This schedule does not work") {
		t.Errorf("a schedule that ends before its next occurrence previews as:\n%s", body)
	}
	// Without a session an htmx request gets a 401, not a sign-in page.
	anon := e.client(t)
	if code, _, _ := anon.do("GET", "/ui/schedule/preview?cron_expr=*", nil, hx); code != http.StatusUnauthorized {
		t.Errorf("preview without a session: %d, want 401", code)
	}
}

// TestTimesInUTCAreShownOnce: a job in UTC shows its fire times in one
// UTC column (not "In UTC" beside "UTC") and its next fire once; a job in
// another zone shows both.
func TestTimesInUTCAreShownOnce(t *testing.T) {
	e, c := signedIn(t, writeKey)
	utc := reactortest.CreateJob(t, e.in.DB, &chronos.Job{Name: "in-utc", CronExpr: ptr("0 3 * * *"), TargetURL: "http://127.0.0.1:9/x"})
	berlin := reactortest.CreateJob(t, e.in.DB, &chronos.Job{Name: "in-berlin", CronExpr: ptr("0 3 * * *"), Timezone: "Europe/Berlin", TargetURL: "http://127.0.0.1:9/x"})
	_, body := c.get("/ui/jobs/" + strconv.FormatInt(utc.ID, 10))
	if strings.Contains(body, "In UTC") || strings.Count(body, "<th>UTC</th>") != 1 || strings.Contains(body, "UTC · 20") {
		t.Errorf("a job in UTC shows UTC twice:\n%s", body)
	}
	if !strings.Contains(body, "the next 10 fire times") {
		t.Error("a job in UTC does not say \"the next 10 fire times\"")
	}
	_, body = c.get("/ui/jobs/" + strconv.FormatInt(berlin.ID, 10))
	if !strings.Contains(body, "<th>In Europe/Berlin</th>") || strings.Count(body, "<th>UTC</th>") != 1 {
		t.Errorf("a job in Europe/Berlin does not show its fire times in Berlin and in UTC:\n%s", body)
	}
	_, body = c.get("/ui/jobs")
	if strings.Contains(body, "</code> · UTC<") {
		t.Error("the job list names the UTC zone beside each UTC schedule")
	}
}

// TestJobRunsFragment: GET /ui/jobs/{id}/runs is the runs section alone
// for htmx, and sends a plain browser to the job page at that page.
func TestJobRunsFragment(t *testing.T) {
	e, c := signedIn(t, readKey)
	j := reactortest.CreateJob(t, e.in.DB, &chronos.Job{Name: "j", CronExpr: ptr("0 3 * * *"), TargetURL: "http://127.0.0.1:9/x"})
	for range 3 {
		e.in.TriggerSilently(t, j.ID)
	}
	id := strconv.FormatInt(j.ID, 10)
	code, loc, _ := c.do("GET", "/ui/jobs/"+id+"/runs?status=pending", nil, nil)
	if code != http.StatusSeeOther || loc != "/ui/jobs/"+id+"?status=pending#runs" {
		t.Errorf("the runs fragment without htmx: %d to %q", code, loc)
	}
	code, _, body := c.do("GET", "/ui/jobs/"+id+"/runs?status=pending", nil, map[string]string{"HX-Request": "true"})
	if code != http.StatusOK || strings.Contains(body, "<html") || !strings.HasPrefix(body, `<section class="card" id="runs">`) || strings.Count(body, `<tr id="run-`) != 3 {
		t.Errorf("the runs fragment with htmx: %d\n%s", code, body)
	}
}

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
