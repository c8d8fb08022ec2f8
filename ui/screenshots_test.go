package ui_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/reactor/reactortest"
)

// TestScreenshots renders each page of the console, light and dark, into
// the directory CHRONOS_SCREENSHOTS names (`make screenshots` sets it to
// docs/). It is a generator, not a check: without the variable it has
// nothing to do.
func TestScreenshots(t *testing.T) {
	dir := os.Getenv("CHRONOS_SCREENSHOTS")
	if dir == "" {
		t.Skip("CHRONOS_SCREENSHOTS is not set; `make screenshots` sets it")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	e := newEnvAs(t, true, "chronos-1")
	tg := reactortest.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "flaky") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadGateway)
			w.Write([]byte(`{"error": "upstream billing API timed out", "request_id": "9f2c1e"}`))
			return
		}
		w.Write([]byte(`{"ok": true}`))
	})
	mk := func(name, cron, zone, path string, retries int, team, env string) *chronos.Job {
		j := &chronos.Job{Name: name, CronExpr: ptr(cron), Timezone: zone, TargetURL: tg.URL + path, MaxRetries: retries,
			BackoffBaseSeconds: 0.05, BackoffMaxSeconds: 0.1, Headers: map[string]string{"X-Team": "platform"}, Payload: []byte(`{"report": "daily"}`),
			Labels: map[string]string{"team": team, "env": env}}
		return reactortest.CreateJob(t, e.in.DB, j)
	}
	report := mk("nightly-report", "0 3 * * *", "Europe/Berlin", "/hooks/report", 3, "data", "prod")
	billing := mk("billing-sync", "*/5 * * * *", "America/New_York", "/hooks/billing", 5, "payments", "prod")
	flaky := mk("flaky-partner-webhook", "*/15 * * * *", "UTC", "/hooks/flaky", 1, "partners", "prod")
	mk("cache-warmup", "@hourly", "Asia/Tokyo", "/hooks/cache", 3, "platform", "staging")
	paused := mk("quarterly-audit", "0 9 1 */3 *", "Europe/London", "/hooks/audit", 3, "finance", "prod")
	// A history to show: the report's schedule moved, a pause and a resume.
	oncall := chronos.WithActor(t.Context(), "oncall")
	for _, u := range []*chronos.JobUpdate{{CronExpr: chronos.Some("30 3 * * *"), Description: chronos.Some("Mails yesterday's figures to the board")},
		{Enabled: chronos.Some(false)}, {Enabled: chronos.Some(true)}} {
		if _, err := e.in.DB.UpdateJob(oncall, report.ID, u); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.in.DB.UpdateJob(oncall, paused.ID, &chronos.JobUpdate{Enabled: chronos.Some(false)}); err != nil {
		t.Fatal(err)
	}
	// The report's page shows the policies and a signing secret in its
	// grace period.
	if _, err := e.in.DB.UpdateJob(oncall, report.ID, &chronos.JobUpdate{Misfire: chronos.Some(chronos.MisfireAll), JitterSeconds: chronos.Some(30),
		StartingDeadlineSeconds: chronos.Some(600), OnDeadURL: chronos.Some(tg.URL + "/hooks/alerts"), SecretHeaders: chronos.Some([]string{"X-Team"}),
		Exclude: chronos.Some([]chronos.DateRange{{From: "2026-12-24", To: "2026-12-26"}})}); err != nil {
		t.Fatal(err)
	}
	for _, grace := range []time.Duration{0, 24 * time.Hour} {
		if _, err := e.in.DB.RotateSigningSecret(oncall, report.ID, chronos.NewSigningSecret(), grace); err != nil {
			t.Fatal(err)
		}
	}
	var last, dead *chronos.Run
	for i := range 6 {
		for _, j := range []*chronos.Job{report, billing} {
			last = e.in.Trigger(t, j.ID)
			reactortest.WaitTerminal(t, e.in.DB, last.ID, 10*time.Second)
		}
		if i%2 == 0 {
			dead = e.in.Trigger(t, flaky.ID)
			reactortest.WaitTerminal(t, e.in.DB, dead.ID, 10*time.Second)
		}
	}
	// The dead run's page links to its redrive.
	redrive, err := e.in.DB.Redrive(t.Context(), dead.ID)
	if err != nil {
		t.Fatal(err)
	}
	reactortest.WaitTerminal(t, e.in.DB, redrive.ID, 10*time.Second)
	pages := []struct{ name, path, ready string }{
		{"overview", "/ui/", "svg.chart"},
		{"jobs", "/ui/jobs", "table.list"},
		{"job", "/ui/jobs/" + strconv.FormatInt(report.ID, 10), "table.list"},
		{"job-form", "/ui/jobs/" + strconv.FormatInt(billing.ID, 10) + "/edit", "#cron-preview table.fires"},
		{"run", "/ui/runs/" + strconv.FormatInt(dead.ID, 10), "pre.body"},
		{"dead-letters", "/ui/runs", "table.list"},
		{"live", "/ui/live", "#live-body tr.ev"},
	}
	for _, dark := range []bool{false, true} {
		scheme := map[bool]string{false: "light", true: "dark"}[dark]
		ctx, blog := newBrowser(t, 1200, 760, dark)
		shot := func(name string) {
			png := value(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
			if err := os.WriteFile(filepath.Join(dir, "console-"+name+"-"+scheme+".png"), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		run(t, ctx, "sign-in page", chromedp.Navigate(e.srv.URL+"/ui/login"), retryStale(chromedp.WaitVisible(css("#key"))))
		shot("sign-in")
		run(t, ctx, "sign in",
			retryStale(chromedp.SendKeys(css("#key"), writeKey)),
			click("main form button[type=submit]"),
			until(`location.pathname === "/ui/"`, 10*time.Second))
		for _, p := range pages {
			steps := []chromedp.Action[chromedp.Void]{chromedp.Navigate(e.srv.URL + p.path)}
			if p.name == "live" {
				steps = append(steps, until(`document.getElementById("live-state").textContent === "live"`, 10*time.Second),
					chromedp.Func(func(_ context.Context, _ *chromedp.Target) error {
						e.in.Trigger(t, report.ID)
						e.in.Trigger(t, billing.ID)
						return nil
					}))
			}
			steps = append(steps, retryStale(chromedp.WaitVisible(css(p.ready))), until(`document.readyState === "complete"`, 5*time.Second))
			run(t, ctx, p.name, steps...)
			if p.name == "live" {
				run(t, ctx, "live rows", until(`document.querySelectorAll("#live-body tr.ev").length >= 6`, 10*time.Second))
			}
			shot(p.name)
		}
		// The job list and the dead letters on a phone.
		for _, p := range []struct{ name, path string }{{"jobs-narrow", "/ui/jobs"}, {"dead-letters-narrow", "/ui/runs"}} {
			run(t, ctx, p.name, chromedp.EmulateViewport(375, 760), chromedp.Navigate(e.srv.URL+p.path), retryStale(chromedp.WaitVisible(css("table.list"))),
				until(`document.readyState === "complete"`, 5*time.Second))
			shot(p.name)
		}
		run(t, ctx, "back to desktop", chromedp.EmulateViewport(1200, 760))
		if errs := blog.Errors(); len(errs) > 0 {
			t.Errorf("the browser reported errors (%s):\n%s", scheme, strings.Join(errs, "\n"))
		}
	}
}
