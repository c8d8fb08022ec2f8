package ui_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/chronoshq/chronos"
	apiclient "github.com/chronoshq/chronos/client"
	chttp "github.com/chronoshq/chronos/http"
	"github.com/chronoshq/chronos/http/apitest"
	"github.com/chronoshq/chronos/reactor/reactortest"
)

// apiClient serves the REST API beside the console, on the same database,
// and returns a client of it: what the console wrote is read back the way
// a user of the API reads it.
func apiClient(t *testing.T, e *env) *apiclient.Client {
	t.Helper()
	probe := &apitest.Probe{}
	probe.Connected.Store(true)
	srv := chttp.NewServer(chttp.Config{Instance: "ui-test-api", APIKeys: testKeys, TargetPolicy: chronos.TargetPolicy{AllowPrivate: true}},
		e.in.DB, e.in.Bus, probe, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	c, err := apiclient.New(ts.URL, writeKey, apiclient.WithHTTPClient(ts.Client()))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// setField sets an input, select or textarea of the form by id, as typing
// would, and tells htmx it changed.
func setField(id, v string) chromedp.Action[chromedp.Void] {
	b, _ := json.Marshal(v)
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		ok, err := js[bool](`(() => { const el = document.getElementById("`+id+`"); if (!el) return false; el.value = `+string(b)+`;
			el.dispatchEvent(new Event("input", {bubbles: true})); el.dispatchEvent(new Event("change", {bubbles: true})); return true })()`)(ctx, tg)
		if err == nil && !ok {
			err = errorString("no field #" + id)
		}
		return err
	})
}

type errorString string

func (e errorString) Error() string { return string(e) }

// visible is a JavaScript test that the element with that id is shown.
func visible(id string) string {
	return `(document.getElementById("` + id + `").offsetParent !== null)`
}

// TestBrowserEditsEveryField edits every field of a job in the console's
// form, in a real Chromium, and reads each back through the REST API; the
// schedule's inputs follow the radio (a one-shot's run_at, a cron job's
// expression and window); the signing secret is generated, rotated with a
// grace period (each new secret shown once, and the one that signs), and
// given back to the cluster; the job page pages its runs by keyset
// cursor.
func TestBrowserEditsEveryField(t *testing.T) {
	e := newEnv(t, false)
	api := apiClient(t, e)
	bg := context.Background()
	j := reactortest.CreateJob(t, e.in.DB, &chronos.Job{Name: "edit-me", CronExpr: ptr("0 3 * * *"), TargetURL: "http://127.0.0.1:9/old"})
	id := strconv.FormatInt(j.ID, 10)
	if _, err := e.in.DB.PutLimit(bg, &chronos.Limit{Key: "api.example", MaxConcurrency: ptr(5)}); err != nil {
		t.Fatal(err)
	}
	ctx, blog := newBrowser(t, 1280, 900, false)
	base := e.srv.URL
	browserSignIn(t, ctx, base)

	// The schedule's inputs follow the radio.
	run(t, ctx, "open the edit form",
		chromedp.Navigate(base+"/ui/jobs/"+id+"/edit"),
		retryStale(chromedp.WaitVisible(css("#cron_expr"))),
		until(visible("cron_expr")+` && !`+visible("run_at")+` && `+visible("starts_at")+` && `+visible("exclude"), 5*time.Second),
		click(`input[name=kind][value=once]`),
		until(`!`+visible("cron_expr")+` && `+visible("run_at")+` && !`+visible("starts_at")+` && !`+visible("exclude"), 5*time.Second),
		click(`input[name=kind][value=cron]`),
		until(visible("cron_expr")+` && !`+visible("run_at"), 5*time.Second))

	// Every field of a cron job.
	fields := [][2]string{
		{"name", "edited"}, {"description", "Mails the figures"}, {"labels", "team=core env=prod"},
		{"cron_expr", "*/5 * * * *"}, {"timezone", "Europe/Berlin"},
		{"method", "PUT"}, {"target_url", "http://127.0.0.1:9/new"},
		{"headers", "X-Env: prod\nX-Api-Key: k-123"}, {"secret_headers", "X-Api-Key"}, {"payload", `{"report": "daily"}`},
		{"timeout_seconds", "12"}, {"max_retries", "7"}, {"backoff", "linear"}, {"backoff_base_seconds", "1.5"}, {"backoff_max_seconds", "90"},
		{"overlap", "queue_one"}, {"on_dead_url", "http://127.0.0.1:9/dead"}, {"limit_key", "api.example"},
		{"misfire", "all"}, {"jitter_seconds", "30"}, {"starting_deadline_seconds", "120"},
		{"starts_at", "2030-01-01T00:00:00"}, {"ends_at", "2040-06-30T12:00:00"}, {"exclude", "2030-12-24..2030-12-26\n2031-01-01"},
	}
	var steps []chromedp.Action[chromedp.Void]
	for _, f := range fields {
		steps = append(steps, setField(f[0], f[1]))
	}
	steps = append(steps, click("form.form button.primary"),
		until(`location.pathname === "/ui/jobs/`+id+`" && document.getElementById("notice").textContent === "Saved."`, 10*time.Second))
	run(t, ctx, "edit every field", steps...)
	got, err := api.GetJob(bg, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	want := map[string]any{
		"name": "edited", "description": "Mails the figures", "labels": map[string]string{"team": "core", "env": "prod"},
		"cron_expr": "*/5 * * * *", "run_at": (*time.Time)(nil), "timezone": "Europe/Berlin", "method": "PUT", "target_url": "http://127.0.0.1:9/new",
		"headers": map[string]string{"X-Env": "prod", "X-Api-Key": chronos.Redacted}, "secret_headers": []string{"X-Api-Key"},
		"payload": `{"report":"daily"}`, "timeout_seconds": 12, "max_retries": 7, "backoff": chronos.BackoffLinear,
		"backoff_base_seconds": 1.5, "backoff_max_seconds": 90.0, "overlap": chronos.OverlapQueueOne, "on_dead_url": "http://127.0.0.1:9/dead",
		"limit_key": "api.example",
		"misfire":   chronos.MisfireAll, "jitter_seconds": 30, "starting_deadline_seconds": 120,
		"starts_at": time.Date(2030, 1, 1, 0, 0, 0, 0, berlin).UTC(), "ends_at": time.Date(2040, 6, 30, 12, 0, 0, 0, berlin).UTC(),
		"exclude": []chronos.DateRange{{From: "2030-12-24", To: "2030-12-26"}, {From: "2031-01-01", To: "2031-01-01"}},
	}
	have := map[string]any{
		"name": got.Name, "description": got.Description, "labels": got.Labels, "cron_expr": deref(got.CronExpr), "run_at": got.RunAt,
		"timezone": got.Timezone, "method": got.Method, "target_url": got.TargetURL, "headers": got.Headers, "secret_headers": got.SecretHeaders,
		"payload": string(got.Payload), "timeout_seconds": got.TimeoutSeconds, "max_retries": got.MaxRetries, "backoff": got.Backoff,
		"backoff_base_seconds": got.BackoffBaseSeconds, "backoff_max_seconds": got.BackoffMaxSeconds, "overlap": got.Overlap,
		"on_dead_url": deref(got.OnDeadURL), "limit_key": deref(got.LimitKey), "misfire": got.Misfire, "jitter_seconds": got.JitterSeconds,
		"starting_deadline_seconds": deref(got.StartingDeadlineSeconds), "starts_at": derefTime(got.StartsAt), "ends_at": derefTime(got.EndsAt),
		"exclude": got.Exclude,
	}
	for k, w := range want {
		if !reflect.DeepEqual(have[k], w) {
			t.Errorf("after the edit the API shows %s = %#v, want %#v", k, have[k], w)
		}
	}
	if stored, _ := e.in.DB.Job(bg, j.ID); stored.Headers["X-Api-Key"] != "k-123" {
		t.Errorf("the secret header's value is %q, want k-123", stored.Headers["X-Api-Key"])
	}
	// The job page shows each of them.
	page := value(t, ctx, "read the job page", js[string](`document.querySelector("main").textContent`))
	for _, s := range []string{"Mails the figures", "*/5 * * * *", "PUT http://127.0.0.1:9/new", "X-Api-Key: " + chronos.Redacted, "12 s",
		"7, linear backoff from 1.5 s up to 90 s", "queue_one", "http://127.0.0.1:9/dead", "every missed occurrence, in order", "120 s", "up to 30 s",
		"2030-12-24 to 2030-12-26, 2031-01-01", "from 2030-01-01 00:00:00 CET until 2040-06-30 12:00:00 CEST"} {
		if !strings.Contains(page, s) {
			t.Errorf("the job page does not show %q", s)
		}
	}

	// The form shows the stored values back; saved unchanged, the secret
	// header keeps its value.
	run(t, ctx, "save unchanged",
		chromedp.Navigate(base+"/ui/jobs/"+id+"/edit"),
		retryStale(chromedp.WaitVisible(css("#name"))),
		click("form.form button.primary"),
		until(`document.getElementById("notice").textContent === "Saved."`, 10*time.Second))
	again, err := api.GetJob(bg, j.ID)
	if err != nil || !reflect.DeepEqual(again.Exclude, got.Exclude) || deref(again.StartingDeadlineSeconds) != 120 || again.Misfire != chronos.MisfireAll ||
		!again.StartsAt.Equal(*got.StartsAt) || deref(again.OnDeadURL) != "http://127.0.0.1:9/dead" || !reflect.DeepEqual(again.SecretHeaders, got.SecretHeaders) {
		t.Errorf("saved unchanged, the job became %+v (%v), was %+v", again, err, got)
	}
	if stored, _ := e.in.DB.Job(bg, j.ID); stored.Headers["X-Api-Key"] != "k-123" {
		t.Errorf("saved unchanged, the secret header's value is %q, want k-123 kept", stored.Headers["X-Api-Key"])
	}

	// A one-shot: run_at set, the cron-only fields cleared.
	run(t, ctx, "make it a one-shot",
		chromedp.Navigate(base+"/ui/jobs/"+id+"/edit"),
		retryStale(chromedp.WaitVisible(css("#name"))),
		click(`input[name=kind][value=once]`),
		setField("run_at", "2035-03-01T09:30:00"),
		setField("jitter_seconds", "0"), setField("starting_deadline_seconds", ""), setField("on_dead_url", ""), setField("misfire", "none"),
		click("form.form button.primary"),
		until(`document.getElementById("notice").textContent === "Saved."`, 10*time.Second))
	once, err := api.GetJob(bg, j.ID)
	if err != nil || once.CronExpr != nil || once.RunAt == nil || !once.RunAt.Equal(time.Date(2035, 3, 1, 9, 30, 0, 0, berlin)) ||
		once.StartsAt != nil || once.EndsAt != nil || len(once.Exclude) != 0 || once.OnDeadURL != nil || once.StartingDeadlineSeconds != nil ||
		once.JitterSeconds != 0 || once.Misfire != chronos.MisfireNone {
		t.Errorf("as a one-shot the API shows %+v (%v)", once, err)
	}
	fireText := value(t, ctx, "read the fire times", js[string](`document.querySelector("#fires").textContent`))
	if !strings.Contains(fireText, "one fire time left") || strings.Contains(fireText, "next 1 fire") {
		t.Errorf("a one-shot's fire times say %q, want \"one fire time left\" in words", fireText)
	}

	// The signing secret: generate one (no grace), then rotate with a
	// grace period; each is shown once and is the one that signs.
	secretOf := func(step, grace string) string {
		run(t, ctx, step,
			chromedp.Navigate(base+"/ui/jobs/"+id+"#secrets"),
			retryStale(chromedp.WaitVisible(css("#rotate-secret"))),
			setField("grace_seconds", grace),
			click("#rotate-secret"),
			until(`document.getElementById("new-secret") !== null`, 10*time.Second))
		shown := value(t, ctx, step, js[string](`document.getElementById("new-secret").textContent`))
		stored, err := e.in.DB.Job(bg, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if cur := stored.SigningSecrets[len(stored.SigningSecrets)-1]; cur.Secret != shown || cur.ExpiresAt != nil || !strings.HasPrefix(shown, chronos.SigningSecretPrefix) {
			t.Fatalf("%s: the page shows %q, the current secret is %q", step, shown, cur.Secret)
		}
		return shown
	}
	first := secretOf("generate a secret", "0")
	if got, _ := api.GetJob(bg, j.ID); len(got.SigningSecrets) != 1 {
		t.Errorf("after generating, the API shows %d signing secrets, want 1", len(got.SigningSecrets))
	}
	second := secretOf("rotate with a grace period", "3600")
	rotated, _ := api.GetJob(bg, j.ID)
	if first == second || len(rotated.SigningSecrets) != 2 || rotated.SigningSecrets[0].ExpiresAt == nil ||
		rotated.SigningSecrets[0].ExpiresAt.Sub(rotated.SigningSecrets[1].CreatedAt) != time.Hour || rotated.SigningSecrets[1].ExpiresAt != nil {
		t.Errorf("after rotating with an hour's grace the API shows %+v, want the old secret until an hour from now and a new current one", rotated.SigningSecrets)
	}
	run(t, ctx, "the job page", chromedp.Navigate(base+"/ui/jobs/"+id), retryStale(chromedp.WaitVisible(css("#secrets"))))
	body := value(t, ctx, "read the job page", js[string](`document.documentElement.outerHTML`))
	if strings.Contains(body, first) || strings.Contains(body, second) {
		t.Error("the job page shows a signing secret's value")
	}
	run(t, ctx, "back to the cluster's secret",
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := js[bool](`(window.confirm = () => true, true)`)(ctx, tg)
			return err
		}),
		click(`button[formaction$="/signing-secret/delete"]`),
		until(`document.getElementById("notice").textContent.includes("cluster's secret")`, 10*time.Second))
	if got, _ := api.GetJob(bg, j.ID); len(got.SigningSecrets) != 0 {
		t.Errorf("after going back to the cluster's secret the API shows %d signing secrets", len(got.SigningSecrets))
	}

	// The job page pages its runs: 20 a page, older ones by cursor.
	for range 25 {
		e.in.TriggerSilently(t, j.ID)
	}
	rows := `document.querySelectorAll("#runs tbody tr[id^=run-]")`
	run(t, ctx, "page the runs",
		chromedp.Navigate(base+"/ui/jobs/"+id),
		until(rows+`.length === 20 && document.getElementById("older-runs") !== null`, 10*time.Second),
		click("#older-runs"),
		until(rows+`.length === 5 && location.search.includes("cursor=") && document.getElementById("older-runs") === null`, 10*time.Second),
		click(`#runs .pager a`),
		until(rows+`.length === 20 && !location.search.includes("cursor=")`, 10*time.Second))

	if errs := blog.Errors(); len(errs) > 0 {
		t.Errorf("the browser reported errors:\n%s", strings.Join(errs, "\n"))
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func derefTime(p *time.Time) time.Time {
	if p == nil {
		return time.Time{}
	}
	return p.UTC()
}

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
		retryStale(chromedp.WaitVisible(css("#calendars"))),
		until(`document.getElementById("calendars").value === "closures"`, 5*time.Second),
		setField("calendar_policy", "next_business_day"),
		click("form.form button.primary"),
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
		click("#backfill-open"),
		until(`document.getElementById("backfill-dry-run") !== null`, 10*time.Second),
		until(`document.getElementById("backfill-create").textContent.includes("Create 3 run(s)")`, 5*time.Second))
	page, err := api.ListJobRuns(bg, j.ID, apiclient.RunFilter{})
	if err != nil || len(page.Runs) != 0 {
		t.Fatalf("the dry run created runs: %+v %v", page, err)
	}
	run(t, ctx, "the backfill",
		click("#backfill-create"),
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
