package ui_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/reactor/reactortest"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// addDeadRuns inserts n dead runs of a job with the given trigger, created
// ago (a Postgres interval) and spaced a second apart, and returns their
// ids, oldest first.
func addDeadRuns(t *testing.T, db *sql.DB, jobID int64, n int, trigger chronos.Trigger, ago string) []int64 {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), `
		INSERT INTO job_runs (job_id, scheduled_at, trigger, status, attempt_count, started_at, finished_at,
		                      last_error, last_status_code, created_at)
		SELECT $1, now() - $4::interval + g * interval '1 second', $3, 'dead', 1, now(), now(),
		       'HTTP 500 from the target', 500, now() - $4::interval + g * interval '1 second'
		  FROM generate_series(1, $2::int) g
		 ORDER BY g
		RETURNING id`, jobID, n, string(trigger), ago)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

var runLinkRE = regexp.MustCompile(`<tr id="run-(\d+)">`)

// listedRuns returns the ids of the runs a run list page shows, in order.
func listedRuns(body string) []int64 { return listedIDs(runLinkRE, body) }

func TestDeadLettersListAndFilters(t *testing.T) {
	e, c := signedIn(t, writeKey)
	a := reactortest.CreateJob(t, e.in.DB, &chronos.Job{Name: "billing-sync", CronExpr: ptr("0 3 * * *"), TargetURL: "http://127.0.0.1:9/x"})
	b := reactortest.CreateJob(t, e.in.DB, &chronos.Job{Name: "report", CronExpr: ptr("0 4 * * *"), TargetURL: "http://127.0.0.1:9/x"})
	oldA := addDeadRuns(t, e.in.DB, a.ID, 3, chronos.TriggerSchedule, "3 days")
	newA := addDeadRuns(t, e.in.DB, a.ID, 40, chronos.TriggerSchedule, "1 hour")
	manB := addDeadRuns(t, e.in.DB, b.ID, 20, chronos.TriggerManual, "2 hours")
	live := e.in.TriggerSilently(t, b.ID) // pending: not a dead letter

	// The default is the dead letters of every job, newest first, 50 a
	// page; the second page has the rest.
	code, body := c.get("/ui/runs")
	if code != http.StatusOK || !strings.Contains(body, "<h1>Dead letters</h1>") {
		t.Fatalf("GET /ui/runs: %d", code)
	}
	ids := listedRuns(body)
	if len(ids) != 50 || ids[0] != manB[len(manB)-1] || ids[49] != newA[len(newA)-30] {
		t.Fatalf("first page lists %d runs from %v, want 50 from the newest dead run %d", len(ids), ids[:min(len(ids), 1)], manB[len(manB)-1])
	}
	if !strings.Contains(body, ">billing-sync</a>") || !strings.Contains(body, ">report</a>") {
		t.Error("the list does not name the runs' jobs")
	}
	m := regexp.MustCompile(`href="(/ui/runs\?[^"]*cursor=[^"]*)">Older runs`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no link to the next page")
	}
	_, body = c.get(strings.ReplaceAll(m[1], "&amp;", "&"))
	if got := listedRuns(body); len(got) != 13 || got[len(got)-1] != oldA[0] {
		t.Fatalf("second page lists %v, want the 13 oldest dead runs", got)
	}

	// Every filter of GET /v1/runs.
	for query, want := range map[string][]int64{
		"job_id=" + strconv.FormatInt(b.ID, 10) + "&trigger=manual": {manB[19], manB[0]},
		"status=any&job_id=" + strconv.FormatInt(b.ID, 10):          {live.ID, manB[0]},
		"status=pending": {live.ID, live.ID},
	} {
		_, body := c.get("/ui/runs?" + query)
		got := listedRuns(body)
		if len(got) == 0 || got[0] != want[0] || got[len(got)-1] != want[1] {
			t.Errorf("GET /ui/runs?%s lists %v, want %d first and %d last", query, got, want[0], want[1])
		}
	}
	// since and until, in UTC, on created_at: the three old runs only.
	now, _ := e.in.DB.Now(context.Background())
	q := url.Values{"since": {now.Add(-96 * 3600e9).Format("2006-01-02T15:04")}, "until": {now.Add(-24 * 3600e9).Format("2006-01-02T15:04:05")}}
	_, body = c.get("/ui/runs?" + q.Encode())
	if got := listedRuns(body); len(got) != 3 || got[0] != oldA[2] {
		t.Errorf("since/until list %v, want the 3 runs of three days ago %v", got, oldA)
	}
	// A filter that does not parse is a 400 that names it, as in the API.
	code, body = c.get("/ui/runs?status=zombie&job_id=x&since=yesterday")
	if code != http.StatusBadRequest || !strings.Contains(body, "status: must be one of") || !strings.Contains(body, "job_id: must be a positive integer") ||
		!strings.Contains(body, "since: must be a date and time") {
		t.Errorf("bad filters: %d, want 400 naming status, job_id and since", code)
	}
}

func TestRedriveFromTheDeadLetters(t *testing.T) {
	e, c := signedIn(t, writeKey)
	j := reactortest.CreateJob(t, e.in.DB, &chronos.Job{Name: "flaky", CronExpr: ptr("0 3 * * *"), TargetURL: "http://127.0.0.1:9/x"})
	dead := addDeadRuns(t, e.in.DB, j.ID, 1003, chronos.TriggerSchedule, "1 day")
	ctx := context.Background()
	redrives := func() map[int64]int {
		return sqltest.Map[int64, int](t, ctx, e.in.DB.Pool, `SELECT redrive_of, count(*) FROM job_runs WHERE redrive_of IS NOT NULL GROUP BY 1`)
	}

	// Redrive two selected runs: the list comes back saying so, and shows
	// each one's redrive.
	sel := url.Values{"action": {"selected"}, "id": {strconv.FormatInt(dead[0], 10), strconv.FormatInt(dead[1], 10)}, "back": {"/ui/runs?status=dead"}}
	code, loc, _ := c.post("/ui/runs/redrive", sel)
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/runs?") {
		t.Fatalf("redrive selected: %d to %q", code, loc)
	}
	_, body := c.get(loc)
	if !strings.Contains(body, "Redriven 2 dead runs") {
		t.Errorf("after redriving two runs the notice is not there:\n%s", body)
	}
	if got := redrives(); len(got) != 2 || got[dead[0]] != 1 || got[dead[1]] != 1 {
		t.Fatalf("redrives after selecting two: %v", got)
	}
	// Again while those redrives are pending: skipped, never twice.
	_, loc, _ = c.post("/ui/runs/redrive", sel)
	if _, body := c.get(loc); !strings.Contains(body, "Nothing was redriven. Skipped 2 runs") {
		t.Errorf("a second redrive of the same runs was not skipped: %s", loc)
	}
	if got := redrives(); len(got) != 2 {
		t.Fatalf("redrives after selecting them again: %v", got)
	}
	// Redrive all that match: at most 1,000 a press, oldest first, never
	// one that was redriven; the notice says more remain.
	all := url.Values{"action": {"all"}, "status": {"dead"}, "job_id": {strconv.FormatInt(j.ID, 10)}, "back": {"/ui/runs"}}
	_, loc, _ = c.post("/ui/runs/redrive", all)
	if _, body := c.get(loc); !strings.Contains(body, "Redriven 1000 dead runs") || !strings.Contains(body, "More dead runs match") {
		t.Errorf("redrive all: the notice does not say 1000 and more (%s)", loc)
	}
	_, loc, _ = c.post("/ui/runs/redrive", all)
	if _, body := c.get(loc); !strings.Contains(body, "Redriven 1 dead run:") || strings.Contains(body, "More dead runs match") {
		t.Errorf("redrive all again: want the last one redriven (%s)", loc)
	}
	if got := redrives(); len(got) != 1003 {
		t.Fatalf("%d dead runs redriven, want all 1003", len(got))
	}
	for of, n := range redrives() {
		if n != 1 {
			t.Fatalf("run %d redriven %d times", of, n)
		}
	}
	// The audit history says who.
	entries, _, err := e.in.DB.History(ctx, j.ID, "", 5)
	if err != nil || len(entries) == 0 || entries[0].Action != chronos.AuditRedrive || entries[0].Actor != "ops" {
		t.Fatalf("history after a console redrive: %+v, %v; want a redrive by ops", entries[:min(len(entries), 1)], err)
	}
	// Bad forms.
	for _, f := range []url.Values{{"action": {"selected"}}, {"action": {"selected"}, "id": {"x"}}, {"action": {"nope"}},
		{"action": {"all"}, "status": {"succeeded"}}} {
		if code, _, _ := c.post("/ui/runs/redrive", f); code != http.StatusBadRequest {
			t.Errorf("POST /ui/runs/redrive %v: %d, want 400", f, code)
		}
	}
}

func TestReaderSeesDeadLettersAndCannotRedrive(t *testing.T) {
	e, c := signedIn(t, readKey)
	j := reactortest.CreateJob(t, e.in.DB, &chronos.Job{Name: "flaky", CronExpr: ptr("0 3 * * *"), TargetURL: "http://127.0.0.1:9/x"})
	dead := addDeadRuns(t, e.in.DB, j.ID, 2, chronos.TriggerSchedule, "1 hour")
	code, body := c.get("/ui/runs")
	if code != http.StatusOK || len(listedRuns(body)) != 2 {
		t.Fatalf("GET /ui/runs as a reader: %d, %d runs", code, len(listedRuns(body)))
	}
	for _, control := range []string{`value="selected"`, `value="all"`, `type="checkbox"`, `action="/ui/runs/redrive"`} {
		if strings.Contains(body, control) {
			t.Errorf("a reader sees %q on the dead letters", control)
		}
	}
	for _, f := range []url.Values{{"action": {"selected"}, "id": {strconv.FormatInt(dead[0], 10)}}, {"action": {"all"}}} {
		if code, _, _ := c.post("/ui/runs/redrive", f); code != http.StatusForbidden {
			t.Errorf("a reader's redrive %v: %d, want 403", f, code)
		}
	}
	// Without the CSRF token a writer is refused too.
	w := e.client(t)
	w.signIn(writeKey)
	if code, _, _ := w.do("POST", "/ui/runs/redrive", url.Values{"action": {"all"}}, nil); code != http.StatusForbidden {
		t.Errorf("a redrive without the CSRF token: %d, want 403", code)
	}
	var n int
	if err := e.in.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM job_runs WHERE redrive_of IS NOT NULL`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d runs redriven (%v), want none", n, err)
	}
}
