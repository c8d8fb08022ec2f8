package ui_test

import (
	"context"
	"encoding/json"
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
	"github.com/chronoshq/chronos/ui"
)

// maxPageBytes is the budget for one page.
const maxPageBytes = 200 << 10

func TestSignInIsRequiredAndSetsAStrictHttpOnlyCookie(t *testing.T) {
	e := newEnv(t, false)
	c := e.client(t)
	code, loc, _ := c.do("GET", "/ui/jobs", nil, nil)
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/login?next=") {
		t.Fatalf("GET /ui/jobs without a session: %d to %q, want 303 to the sign-in page", code, loc)
	}
	if code, _, _ := c.do("GET", "/ui/events", nil, nil); code != http.StatusUnauthorized {
		t.Fatalf("event stream without a session: %d, want 401", code)
	}
	if code, _, body := c.do("POST", "/ui/login", url.Values{"key": {"wrong"}}, nil); code != http.StatusUnauthorized || !strings.Contains(body, "not valid") {
		t.Fatalf("sign in with a wrong key: %d, want 401 and a message", code)
	}
	req, _ := http.NewRequest("POST", e.srv.URL+"/ui/login", strings.NewReader(url.Values{"key": {writeKey}, "next": {"//evil.example/x"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); loc != "/ui/" {
		t.Errorf("sign-in redirect with next=//evil.example/x went to %q, want /ui/", loc)
	}
	ck := resp.Cookies()
	if len(ck) != 1 || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode || ck[0].Path != "/ui/" || ck[0].Secure {
		t.Fatalf("session cookie %+v: want one HttpOnly, SameSite=Strict cookie on /ui/ (not Secure over plain HTTP)", ck)
	}
	if code, body := c.get("/ui/jobs"); code != http.StatusOK || !strings.Contains(body, "ops · write") {
		t.Fatalf("GET /ui/jobs signed in: %d", code)
	}
	// Signing out clears the cookie; the next page asks to sign in again.
	if code, loc, _ := c.post("/ui/logout", nil); code != http.StatusSeeOther || loc != "/ui/login" {
		t.Fatalf("sign out: %d to %q", code, loc)
	}
	if code, _, _ := c.do("GET", "/ui/jobs", nil, nil); code != http.StatusSeeOther {
		t.Fatalf("GET /ui/jobs after signing out: %d, want 303", code)
	}
}

func TestForgedOrStaleSessionsAreRefused(t *testing.T) {
	e, c := signedIn(t, writeKey)
	u, _ := url.Parse(e.srv.URL + "/ui/")
	ck := c.hc.Jar.Cookies(u)[0]
	payload, mac, _ := strings.Cut(ck.Value, ".")
	// The reader's name in the writer's cookie, or a bit flipped: no session.
	for _, v := range []string{"dmlld2VyfDk5OTk5OTk5OTl8MDA." + mac, payload + "." + strings.Repeat("A", len(mac)), "garbage"} {
		req, _ := http.NewRequest("GET", e.srv.URL+"/ui/jobs", nil)
		req.AddCookie(&http.Cookie{Name: "chronos_session", Value: v})
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Errorf("forged cookie %q: %d, want 303 to sign in", v, resp.StatusCode)
		}
	}
}

func TestEveryFormNeedsTheCSRFTokenAndTheSameOrigin(t *testing.T) {
	e, c := signedIn(t, writeKey)
	j := reactortest.CreateJob(t, e.in.DB, &chronos.Job{Name: "j", CronExpr: ptr("0 3 * * *"), TargetURL: "http://127.0.0.1:9/x"})
	path := "/ui/jobs/" + strconv.FormatInt(j.ID, 10) + "/pause"
	if code, _, _ := c.do("POST", path, url.Values{}, nil); code != http.StatusForbidden {
		t.Errorf("POST without a CSRF token: %d, want 403", code)
	}
	if code, _, _ := c.do("POST", path, url.Values{"csrf": {"x" + c.csrf()}}, nil); code != http.StatusForbidden {
		t.Errorf("POST with a wrong CSRF token: %d, want 403", code)
	}
	tok := c.csrf()
	if code, _, _ := c.do("POST", path, url.Values{"csrf": {tok}}, map[string]string{"Origin": "http://evil.example"}); code != http.StatusForbidden {
		t.Errorf("POST from another origin: %d, want 403", code)
	}
	if code, _, _ := c.do("POST", path, url.Values{"csrf": {tok}}, map[string]string{"Sec-Fetch-Site": "cross-site"}); code != http.StatusForbidden {
		t.Errorf("POST marked cross-site: %d, want 403", code)
	}
	if got, _ := e.in.DB.Job(context.Background(), j.ID); !got.Enabled {
		t.Fatal("a refused form paused the job")
	}
	if code, _, _ := c.do("POST", path, url.Values{"csrf": {tok}}, map[string]string{"Origin": e.srv.URL, "Sec-Fetch-Site": "same-origin"}); code != http.StatusSeeOther {
		t.Errorf("POST with the token from the same origin: %d, want 303", code)
	}
	if got, _ := e.in.DB.Job(context.Background(), j.ID); got.Enabled {
		t.Fatal("the accepted form did not pause the job")
	}
}

func TestReadKeySeesEverythingAndChangesNothing(t *testing.T) {
	e, c := signedIn(t, readKey)
	j := reactortest.CreateJob(t, e.in.DB, &chronos.Job{Name: "nightly", CronExpr: ptr("0 3 * * *"), TargetURL: "http://127.0.0.1:9/x"})
	id := strconv.FormatInt(j.ID, 10)
	for _, p := range []string{"/ui/", "/ui/jobs", "/ui/jobs/" + id, "/ui/live", "/ui/runs"} {
		code, body := c.get(p)
		if code != http.StatusOK {
			t.Fatalf("GET %s as a reader: %d", p, code)
		}
		for _, control := range []string{"/pause", "/trigger", "/edit", "/delete", "New job", `value="pause"`, "/redrive", `type="checkbox"`} {
			if strings.Contains(body, control) {
				t.Errorf("GET %s shows a reader the control %q", p, control)
			}
		}
	}
	for _, p := range []string{"/ui/jobs/" + id + "/pause", "/ui/jobs/" + id + "/trigger", "/ui/jobs/" + id + "/delete", "/ui/jobs"} {
		if code, _, _ := c.post(p, url.Values{"name": {"x"}}); code != http.StatusForbidden {
			t.Errorf("POST %s as a reader: %d, want 403", p, code)
		}
	}
	for _, p := range []string{"/ui/jobs/new", "/ui/jobs/" + id + "/edit", "/ui/jobs/" + id + "/delete"} {
		if code, _ := c.get(p); code != http.StatusForbidden {
			t.Errorf("GET %s as a reader: %d, want 403", p, code)
		}
	}
	if got, _ := e.in.DB.Job(context.Background(), j.ID); !got.Enabled {
		t.Fatal("a reader paused the job")
	}
}

func TestCreateEditDeleteThroughTheForms(t *testing.T) {
	e, c := signedIn(t, writeKey)
	form := url.Values{"name": {"report"}, "kind": {"cron"}, "cron_expr": {"0 3 * * *"}, "timezone": {"Europe/Berlin"},
		"method": {"POST"}, "target_url": {"http://127.0.0.1:9/hook"}, "headers": {"Authorization: Bearer s3cret\nX-Env: prod"},
		"payload": {`{"a":1}`}, "timeout_seconds": {"30"}, "max_retries": {"2"}, "backoff": {"linear"},
		"backoff_base_seconds": {"1"}, "backoff_max_seconds": {"60"}, "overlap": {"skip"}, "enabled": {"true"}}
	bad := url.Values{}
	for k, v := range form {
		bad[k] = v
	}
	bad.Set("cron_expr", "61 * * * *")
	if code, _, body := c.post("/ui/jobs", bad); code != http.StatusBadRequest || !strings.Contains(body, `value="61 * * * *"`) {
		t.Fatalf("create with a bad cron expression: %d, want 400 with the form as typed", code)
	}
	code, loc, _ := c.post("/ui/jobs", form)
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/jobs/") {
		t.Fatalf("create: %d to %q", code, loc)
	}
	id, _ := strconv.ParseInt(strings.TrimPrefix(strings.Split(loc, "?")[0], "/ui/jobs/"), 10, 64)
	j, err := e.in.DB.Job(context.Background(), id)
	if err != nil || j.Timezone != "Europe/Berlin" || j.Overlap != chronos.OverlapSkip || j.Headers["X-Env"] != "prod" || j.MaxRetries != 2 {
		t.Fatalf("created job %+v, %v", j, err)
	}
	// The edit form shows the secret header masked, and sending it back
	// keeps the stored value.
	_, body := c.get("/ui/jobs/" + strconv.FormatInt(id, 10) + "/edit")
	if strings.Contains(body, "s3cret") || !strings.Contains(body, "Authorization: "+chronos.Redacted) {
		t.Fatal("the edit form does not mask the secret header")
	}
	form.Set("headers", "Authorization: "+chronos.Redacted+"\nX-Env: staging")
	form.Set("timezone", "America/New_York")
	if code, _, _ := c.post("/ui/jobs/"+strconv.FormatInt(id, 10), form); code != http.StatusSeeOther {
		t.Fatalf("edit: %d", code)
	}
	j, _ = e.in.DB.Job(context.Background(), id)
	if j.Headers["Authorization"] != "Bearer s3cret" || j.Headers["X-Env"] != "staging" || j.Timezone != "America/New_York" {
		t.Fatalf("after edit: headers %v, zone %s", j.Headers, j.Timezone)
	}
	if code, _ := c.get("/ui/jobs/" + strconv.FormatInt(id, 10) + "/delete"); code != http.StatusOK {
		t.Fatalf("delete confirmation: %d", code)
	}
	if code, loc, _ := c.post("/ui/jobs/"+strconv.FormatInt(id, 10)+"/delete", nil); code != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/jobs") {
		t.Fatalf("delete: %d to %q", code, loc)
	}
	if _, err := e.in.DB.Job(context.Background(), id); chronos.ErrorCode(err) != chronos.ENOTFOUND {
		t.Fatalf("the job is still there: %v", err)
	}
}

func TestBulkPauseAndResume(t *testing.T) {
	e, c := signedIn(t, writeKey)
	var ids []string
	for i := range 3 {
		j := reactortest.CreateJob(t, e.in.DB, &chronos.Job{Name: "b" + strconv.Itoa(i), CronExpr: ptr("0 3 * * *"), TargetURL: "http://127.0.0.1:9/x"})
		ids = append(ids, strconv.FormatInt(j.ID, 10))
	}
	if code, _, _ := c.post("/ui/jobs/bulk", url.Values{"action": {"pause"}, "id": ids[:2]}); code != http.StatusSeeOther {
		t.Fatalf("bulk pause: %d", code)
	}
	for i, id := range ids {
		n, _ := strconv.ParseInt(id, 10, 64)
		j, _ := e.in.DB.Job(context.Background(), n)
		if j.Enabled != (i == 2) {
			t.Errorf("job %s enabled=%v after pausing the first two", id, j.Enabled)
		}
	}
	if code, _, _ := c.post("/ui/jobs/bulk", url.Values{"action": {"resume"}, "id": ids}); code != http.StatusSeeOther {
		t.Fatalf("bulk resume: %d", code)
	}
	_, body := c.get("/ui/jobs?enabled=false")
	if strings.Contains(body, ">b0<") {
		t.Error("a resumed job is listed as paused")
	}
}

// TestPagesEscapeWhatUsersAndTargetsSupplied: a job named like a script
// and a target answering markup show as text on every page, which stays
// under the size budget.
func TestPagesEscapeWhatUsersAndTargetsSuppliedAndStaySmall(t *testing.T) {
	e := newEnv(t, true)
	tg := reactortest.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(`<script>alert("target")</script><img src=x onerror=alert(2)>`))
	})
	name := `<script>alert("name")</script>`
	j := reactortest.CreateJob(t, e.in.DB, &chronos.Job{Name: name, CronExpr: ptr(neverDuringATest), TargetURL: tg.URL + `/"><script>x</script>`,
		MaxRetries: 0, Headers: map[string]string{"X-A": `"><b>`}, Description: `<script>alert("description")</script>`,
		Labels: map[string]string{"team": "core"}})
	run := e.in.Trigger(t, j.ID)
	reactortest.WaitStatus(t, e.in.DB, run.ID, chronos.StatusDead, 10e9)
	// The audit history holds HTML too: values before and after, and who
	// (the console and the API only ever record a key's name, but the
	// page must not trust that).
	actor := chronos.WithActor(context.Background(), `<script>alert("actor")</script>`)
	if _, err := e.in.DB.UpdateJob(actor, j.ID, &chronos.JobUpdate{Name: chronos.Some(`<img src=x onerror=alert("renamed")>`),
		Payload: chronos.Some(json.RawMessage(`{"html": "<script>alert(\"payload\")</script>"}`))}); err != nil {
		t.Fatal(err)
	}
	c := e.client(t)
	c.signIn(writeKey)
	id := strconv.FormatInt(j.ID, 10)
	hostileQuery := url.QueryEscape(`<script>alert("query")</script>`)
	for _, p := range []string{"/ui/", "/ui/jobs", "/ui/jobs/" + id, "/ui/jobs/" + id + "/edit", "/ui/jobs/" + id + "/delete",
		"/ui/runs/" + strconv.FormatInt(run.ID, 10), "/ui/live?job_id=" + id, "/ui/jobs/new",
		"/ui/runs", "/ui/runs?status=any&job_id=" + id, "/ui/jobs?q=" + hostileQuery + "&name_prefix=" + hostileQuery,
		"/ui/schedule/preview?cron_expr=" + hostileQuery + "&timezone=" + hostileQuery,
		"/ui/jobs?label=" + hostileQuery, "/ui/runs?trigger=" + hostileQuery + "&since=" + hostileQuery} {
		code, body := c.get(p)
		if code != http.StatusOK && !(code == http.StatusBadRequest && strings.Contains(p, "query")) {
			t.Fatalf("GET %s: %d", p, code)
		}
		if len(body) > maxPageBytes {
			t.Errorf("GET %s: %d bytes, over %d", p, len(body), maxPageBytes)
		}
		for _, raw := range []string{"<script>alert", "<img src=x", `"><b>`, "<script>x", "<script>"} {
			if strings.Contains(body, raw) {
				t.Errorf("GET %s has %q unescaped", p, raw)
			}
		}
	}
	// The overview counts the dead run, and the job list shows it as the
	// job's last outcome.
	if _, body := c.get("/ui/"); !strings.Contains(body, `<span class="n">1</span><span class="sub"><span class="st st-dead">dead</span> last hour`) {
		t.Error("the overview does not count the dead run")
	}
	if _, body := c.get("/ui/jobs"); !strings.Contains(body, `href="/ui/runs/`+strconv.FormatInt(run.ID, 10)+`"><span class="st st-dead">dead</span>`) {
		t.Error("the job list does not show the dead run as the last outcome")
	}
	// The history and the dead letters show the supplied strings as text.
	_, body := c.get("/ui/jobs/" + id)
	for _, want := range []string{"<td>&lt;script&gt;alert(&#34;actor&#34;)&lt;/script&gt;</td>", "&lt;img src=x onerror=alert(&#34;renamed&#34;)&gt;",
		"&lt;script&gt;alert(&#34;description&#34;)&lt;/script&gt;"} {
		if !strings.Contains(body, want) {
			t.Errorf("the job page does not show %q", want)
		}
	}
	if _, body := c.get("/ui/runs"); !strings.Contains(body, ">&lt;img src=x onerror=alert(&#34;renamed&#34;)&gt;</a>") {
		t.Error("the dead letters do not show the job's name as text")
	}
	_, body = c.get("/ui/runs/" + strconv.FormatInt(run.ID, 10))
	if !strings.Contains(body, "&lt;script&gt;alert(&#34;target&#34;)&lt;/script&gt;") {
		t.Error("the run page does not show the target's answer as text")
	}
}

func ptr[T any](v T) *T { return &v }

// neverDuringATest is the schedule of a test's cron job whose runs the
// test counts: it fires at 03:00 UTC on 1 January 2099 only, so a test
// that runs across 03:00 (CI runs at any hour) gets no run it did not
// trigger. A daily "0 3 * * *" did, and the counts were off by one.
const neverDuringATest = "0 3 1 1 * 2099"

func TestEventStreamsPerKeyAreCapped(t *testing.T) {
	e, c := signedIn(t, readKey)
	u, _ := url.Parse(e.srv.URL + "/ui/")
	ck := c.hc.Jar.Cookies(u)[0]
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	open := func() *http.Response {
		req, _ := http.NewRequest("GET", e.srv.URL+"/ui/events?type=run.", nil)
		req.AddCookie(ck)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	var streams []*http.Response
	defer func() {
		for _, s := range streams {
			s.Body.Close()
		}
	}()
	for range ui.MaxStreamsPerKey {
		s := open()
		streams = append(streams, s)
		if s.StatusCode != http.StatusOK || s.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("stream %d: %d %s", len(streams), s.StatusCode, s.Header.Get("Content-Type"))
		}
	}
	extra := open()
	extra.Body.Close()
	if extra.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("stream %d of one key: %d, want 429", ui.MaxStreamsPerKey+1, extra.StatusCode)
	}
}

// TestCreateWithItsOwnSigningSecret: the new-job form can give the job
// its own signing secret, shown once on the page that answers the create,
// and stored as the job's current secret.
func TestCreateWithItsOwnSigningSecret(t *testing.T) {
	e, c := signedIn(t, writeKey)
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
