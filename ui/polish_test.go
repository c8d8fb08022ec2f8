package ui_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/reactor/reactortest"
	"github.com/chronoshq/chronos/sql"
)

// TestTimesInUTCAreShownOnce: a job in UTC shows its fire times in one
// UTC column (not "In UTC" beside "UTC") and its next fire once; a job in
// another zone shows both.
func TestTimesInUTCAreShownOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	utc := reactortest.CreateJob(t, e.in.DB, &chronos.Job{Name: "in-utc", CronExpr: ptr("0 3 * * *"), TargetURL: "http://127.0.0.1:9/x"})
	berlin := reactortest.CreateJob(t, e.in.DB, &chronos.Job{Name: "in-berlin", CronExpr: ptr("0 3 * * *"), Timezone: "Europe/Berlin", TargetURL: "http://127.0.0.1:9/x"})
	c := e.client(t)
	c.signIn(writeKey)
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

var axisLabelRE = regexp.MustCompile(`<text x="[0-9.]+%" y="\d+" text-anchor="(start|middle|end)">\d\d:\d0</text>`)

// TestOverviewChartHasATimeAxis: the chart of the last hour labels its
// time axis every ten minutes.
func TestOverviewChartHasATimeAxis(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	c := e.client(t)
	c.signIn(readKey)
	_, body := c.get("/ui/")
	if n := len(axisLabelRE.FindAllString(body, -1)); n < 5 || n > 7 {
		t.Errorf("the overview chart has %d time labels, want one every ten minutes of the hour:\n%s", n, body)
	}
}

// TestJobRunsFragment: GET /ui/jobs/{id}/runs is the runs section alone
// for htmx, and sends a plain browser to the job page at that page.
func TestJobRunsFragment(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	j := reactortest.CreateJob(t, e.in.DB, &chronos.Job{Name: "j", CronExpr: ptr("0 3 * * *"), TargetURL: "http://127.0.0.1:9/x"})
	for range 3 {
		e.in.TriggerSilently(t, j.ID)
	}
	id := strconv.FormatInt(j.ID, 10)
	c := e.client(t)
	c.signIn(readKey)
	code, loc, _ := c.do("GET", "/ui/jobs/"+id+"/runs?status=pending", nil, nil)
	if code != http.StatusSeeOther || loc != "/ui/jobs/"+id+"?status=pending#runs" {
		t.Errorf("the runs fragment without htmx: %d to %q", code, loc)
	}
	code, _, body := c.do("GET", "/ui/jobs/"+id+"/runs?status=pending", nil, map[string]string{"HX-Request": "true"})
	if code != http.StatusOK || strings.Contains(body, "<html") || !strings.HasPrefix(body, `<section class="card" id="runs">`) || strings.Count(body, `<tr id="run-`) != 3 {
		t.Errorf("the runs fragment with htmx: %d\n%s", code, body)
	}
}

// TestCreateWithItsOwnSigningSecret: the new-job form can give the job
// its own signing secret, shown once on the page that answers the create,
// and stored as the job's current secret.
func TestCreateWithItsOwnSigningSecret(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	c := e.client(t)
	c.signIn(writeKey)
	code, _, body := c.post("/ui/jobs", url.Values{"name": {"signed"}, "kind": {"cron"}, "cron_expr": {"0 3 * * *"}, "timezone": {"UTC"},
		"method": {"POST"}, "target_url": {"http://127.0.0.1:9/x"}, "timeout_seconds": {"30"}, "max_retries": {"3"}, "backoff": {"exponential"},
		"backoff_base_seconds": {"2"}, "backoff_max_seconds": {"600"}, "overlap": {"allow"}, "misfire": {"one"}, "jitter_seconds": {"0"},
		"enabled": {"true"}, "generate_signing_secret": {"true"}})
	m := regexp.MustCompile(`<pre class="body secret" id="new-secret">(whsec_[^<]+)</pre>`).FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		t.Fatalf("create with its own signing secret: %d\n%s", code, body)
	}
	shown := html.UnescapeString(m[1]) // html/template writes + as &#43;
	jobs, _, err := e.in.DB.Jobs(t.Context(), sql.JobFilter{})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("jobs %v, %v", jobs, err)
	}
	j, _ := e.in.DB.Job(t.Context(), jobs[0].ID)
	if len(j.SigningSecrets) != 1 || j.SigningSecrets[0].Secret != shown || j.SigningSecrets[0].ExpiresAt != nil {
		t.Errorf("the job's signing secrets %+v, want the one shown (%s), current", j.SigningSecrets, shown)
	}
}
