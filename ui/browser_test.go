package ui_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/reactor/reactortest"
	"github.com/chronoshq/chronos/sql"
)

// hostile is what the test's target answers: markup and script that must
// show as text, never run.
const hostile = `<script>window.__pwned = "target"</script><img src=x onerror="window.__pwned='img'"><b>bold</b>`

// TestBrowser drives the console in a real Chromium against a real
// instance (listener, reactor, database) as a person would: sign in,
// create a job with the form (a mistyped schedule shows its error as it is
// typed, the corrected one its next fire times), see its fire times, watch
// it fire on the live page, find it by name and by label, pause it inline
// with the keyboard and see the pause in its history, open a dead run and
// redrive it, redrive another from the dead letters, and meet a 403 as a
// read key, with no redrive control shown. Nothing a user or target
// supplied may execute, the page reports no errors, and the pages fit 375
// px.
func TestBrowser(t *testing.T) {
	e := newEnv(t, true)
	tg := reactortest.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		if strings.HasSuffix(r.URL.Path, "/fail") {
			w.WriteHeader(http.StatusInternalServerError)
		}
		w.Write([]byte(hostile))
	})
	ctx, blog := newBrowser(t, 1280, 900, false)
	base := e.srv.URL
	bg := context.Background()

	// Sign in: the console sends a stranger to the sign-in form.
	run(t, ctx, "sign in",
		chromedp.Navigate(base+"/ui/"),
		retryStale(chromedp.WaitVisible(css("#key"))),
		retryStale(chromedp.SendKeys(css("#key"), writeKey)),
		click("main form button[type=submit]"),
		until(`document.querySelector("h1") && document.querySelector("h1").textContent === "Overview"`, 10*time.Second))

	// Another job, for the search to leave out.
	reactortest.CreateJob(t, e.in.DB, &chronos.Job{Name: "nightly-report", CronExpr: ptr("0 3 * * *"), TargetURL: tg.URL + "/ok",
		Labels: map[string]string{"team": "data"}})

	// Create a job with the form: every second, named like a script. The
	// schedule is checked as it is typed: first a mistake, whose error
	// names the field, then a valid one, whose next fire times show.
	name := `<script>window.__pwned = "name"</script>every second`
	preview := `document.getElementById("cron-preview").textContent`
	run(t, ctx, "open the form",
		chromedp.Navigate(base+"/ui/jobs/new"),
		retryStale(chromedp.WaitVisible(css("#name"))),
		until(preview+`.includes("Type a cron expression")`, 10*time.Second),
		chromedp.SetValue(css("#timezone"), "Europe/Berlin"),
		retryStale(chromedp.SendKeys(css("#name"), name)),
		retryStale(chromedp.SendKeys(css("#labels"), "team=core env=prod")))
	run(t, ctx, "type a schedule that does not parse",
		retryStale(chromedp.SendKeys(css("#cron_expr"), "61 * * * *")),
		until(preview+`.includes("This schedule does not work") && `+preview+`.includes("cron_expr")`, 10*time.Second))
	run(t, ctx, "correct it",
		retryStale(chromedp.SendKeys(css("#cron_expr"), strings.Repeat(kb.Backspace, len("61 * * * *"))+"* * * * * *")),
		until(`document.querySelectorAll("#cron-preview table.fires tbody tr").length === 10 && `+preview+`.includes("In Europe/Berlin")`, 10*time.Second))
	run(t, ctx, "create the job",
		retryStale(chromedp.SendKeys(css("#target_url"), tg.URL+"/ok")),
		click("form.form button.primary"),
		until(`/^\/ui\/jobs\/\d+$/.test(location.pathname) && document.getElementById("notice").textContent === "Job created."`, 10*time.Second))
	path := value(t, ctx, "read the job page", js[string](`location.pathname`))
	// Read in one evaluation: a node id taken first can go stale if the
	// page updates itself in between.
	h1 := value(t, ctx, "read the job heading", js[string](`document.querySelector("h1").textContent`))
	jobID, _ := strconv.ParseInt(strings.TrimPrefix(path, "/ui/jobs/"), 10, 64)
	if strings.TrimSpace(h1) != name {
		t.Errorf("job page heading %q, want the name as text %q", h1, name)
	}
	j, err := e.in.DB.Job(bg, jobID)
	if err != nil || j.Timezone != "Europe/Berlin" || j.CronExpr == nil || *j.CronExpr != "* * * * * *" || !j.Enabled || j.Labels["team"] != "core" {
		t.Fatalf("the form created %+v, %v", j, err)
	}
	// The job page shows its next ten fire times, in Berlin and in UTC.
	fires := value(t, ctx, "read the fire times", js[[]string](`[...document.querySelectorAll("#fires table.fires tbody tr")].map(tr => tr.children[1].textContent + " | " + tr.children[2].textContent)`))
	if len(fires) != 10 || !strings.Contains(fires[0], "CE") || !strings.HasSuffix(fires[0], "Z") {
		t.Errorf("the job page shows the fire times %q, want 10 in Europe/Berlin (CET or CEST) and in UTC", fires)
	}

	// Watch it fire on the live page, then pause and resume the view.
	run(t, ctx, "watch it fire live",
		chromedp.Navigate(base+"/ui/live?job_id="+strconv.FormatInt(jobID, 10)),
		until(`document.querySelector('#live-body tr.ev[data-type="run.attempted"]') !== null`, 20*time.Second),
		click("#live-pause"),
		until(`document.getElementById("live-pause").getAttribute("aria-pressed") === "true" && document.getElementById("live-state").textContent.startsWith("paused")`, 5*time.Second),
		click("#live-pause"),
		until(`document.getElementById("live-state").textContent === "live"`, 5*time.Second))
	other := value(t, ctx, "read the live rows", js[int](`[...document.querySelectorAll("#live-body tr.ev td:nth-child(3)")].filter(td => td.textContent !== "" && td.textContent !== "#`+strconv.FormatInt(jobID, 10)+`").length`))
	if other != 0 {
		t.Errorf("the live page filtered by job %d shows %d events of other jobs", jobID, other)
	}

	// Find it on the job list by a part of its name, then by a label.
	row := "#job-" + strconv.FormatInt(jobID, 10)
	rows := `document.querySelectorAll("table.list tbody tr[id^=job-]")`
	run(t, ctx, "search by name",
		chromedp.Navigate(base+"/ui/jobs"),
		until(rows+`.length === 2`, 10*time.Second),
		retryStale(chromedp.SendKeys(css("#q"), "every sec\r")),
		until(`location.search.includes("q=every") && `+rows+`.length === 1 && document.querySelector("`+row+`") !== null`, 10*time.Second))
	run(t, ctx, "filter by a label",
		chromedp.Navigate(base+"/ui/jobs"),
		retryStale(chromedp.WaitVisible(css("#label"))),
		retryStale(chromedp.SendKeys(css("#label"), "team=core\r")),
		until(`location.search.includes("label=team") && `+rows+`.length === 1 && document.querySelector("`+row+`") !== null`, 10*time.Second),
		click(row+` .labels a.tag[href$="team%3dcore"]`),
		until(`document.getElementById("label").value === "team=core" && `+rows+`.length === 1`, 10*time.Second))

	// Pause it inline on the job list (htmx swaps the row), with the
	// keyboard alone: Tab to the row's Pause button, press Enter.
	pause := row + ` button[formaction$="/pause"]`
	run(t, ctx, "open the job list",
		chromedp.Navigate(base+"/ui/jobs"),
		retryStale(chromedp.WaitVisible(css(pause))))
	tabTo(t, ctx, pause, "the Pause button")
	run(t, ctx, "pause it",
		chromedp.KeyEvent("\r"),
		until(`document.querySelector('`+row+` button[formaction$="/resume"]') !== null && document.getElementById("notice").textContent === "Paused."`, 10*time.Second))
	if j, _ := e.in.DB.Job(bg, jobID); j.Enabled {
		t.Fatal("the job is still enabled after Pause")
	}
	// The job's history shows the pause: who, and enabled before and after.
	run(t, ctx, "read the history",
		chromedp.Navigate(base+"/ui/jobs/"+strconv.FormatInt(jobID, 10)),
		retryStale(chromedp.WaitVisible(css("#history"))))
	hist := value(t, ctx, "read the history", js[[]string](`[...document.querySelectorAll("#history tbody tr")].map(tr => [...tr.children].slice(1).map(td => td.textContent.trim()).join(" | "))`))
	if len(hist) != 2 || hist[0] != "ops | pause | enabled: true → false" || !strings.HasPrefix(hist[1], "ops | create |") {
		t.Errorf("the history shows %q, want a pause by ops (enabled true → false) over the create", hist)
	}

	// A dead run: its page shows the target's answer as text; redrive it.
	// Its schedule never fires while the test runs (a daily one did, at
	// 03:00 UTC, and added a run the counts below did not expect).
	dj := reactortest.CreateJob(t, e.in.DB, &chronos.Job{Name: "fails", CronExpr: ptr(neverDuringATest), TargetURL: tg.URL + "/fail", MaxRetries: 0})
	dead := e.in.Trigger(t, dj.ID)
	reactortest.WaitStatus(t, e.in.DB, dead.ID, chronos.StatusDead, 30*time.Second)
	run(t, ctx, "open the dead run",
		chromedp.Navigate(base+"/ui/runs/"+strconv.FormatInt(dead.ID, 10)),
		retryStale(chromedp.WaitVisible(css("pre.body"))))
	body := value(t, ctx, "read the response body", js[string](`document.querySelector("pre.body").textContent`))
	if body != hostile {
		t.Errorf("the run page shows the response body as %q, want the text %q", body, hostile)
	}
	// Its result names the HTTP status once.
	main := value(t, ctx, "read the dead run", js[string](`document.querySelector("main").textContent`))
	if strings.Count(main, "HTTP 500") != 2 || !strings.Contains(main, "HTTP 500 Internal Server Error") { // the run's last result and its attempt
		t.Errorf("the dead run's page says HTTP 500 %d times, want once for the run and once for its attempt:\n%s", strings.Count(main, "HTTP 500"), main)
	}
	run(t, ctx, "redrive it",
		click(`form[action$="/redrive"] button`),
		until(`location.pathname !== "/ui/runs/`+strconv.FormatInt(dead.ID, 10)+`" && document.getElementById("notice").textContent.startsWith("Redriven")`, 10*time.Second))
	// The redrive links to its original, and the original to its redrive.
	redrivePath := value(t, ctx, "read the redrive's page", js[string](`location.pathname`))
	run(t, ctx, "follow the redrive to its original",
		// Clicked by script: a node id read first can go stale if the page
		// is still settling from the redirect.
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := js[bool](`(document.getElementById("redrive-of").click(), true)`)(ctx, tg)
			return err
		}),
		until(`location.pathname === "/ui/runs/`+strconv.FormatInt(dead.ID, 10)+`" && document.querySelector('#redrives a[href="`+redrivePath+`"]') !== null`, 10*time.Second))
	runs, _, err := e.in.DB.Runs(bg, dj.ID, sql.RunFilter{})
	if err != nil || len(runs) != 2 || runs[0].Trigger != chronos.TriggerRedrive || runs[0].RedriveOf == nil || *runs[0].RedriveOf != dead.ID {
		t.Fatalf("after redrive the job's runs are %v (%v), want a redrive of run %d on top", runs, err, dead.ID)
	}

	// The redrive dies too. On the dead letters, select it (with the
	// keyboard: Tab to its box, Space) and redrive it.
	again := reactortest.WaitStatus(t, e.in.DB, runs[0].ID, chronos.StatusDead, 30*time.Second)
	box := `#run-` + strconv.FormatInt(again.ID, 10) + ` input[type=checkbox]`
	run(t, ctx, "open the dead letters",
		chromedp.Navigate(base+"/ui/"),
		click(`header nav a[href="/ui/runs"]`),
		until(`document.querySelector("h1").textContent === "Dead letters" && document.querySelector('`+box+`') !== null`, 10*time.Second))
	tabTo(t, ctx, box, "the run's checkbox")
	run(t, ctx, "select and redrive",
		chromedp.KeyEvent(" "),
		until(`document.querySelector('`+box+`').checked`, 5*time.Second),
		click(`#runs-form button[value=selected]`),
		until(`document.getElementById("notice").textContent.startsWith("Redriven 1 dead run")`, 10*time.Second))
	runs, _, err = e.in.DB.Runs(bg, dj.ID, sql.RunFilter{})
	if err != nil || len(runs) != 3 || runs[0].RedriveOf == nil || *runs[0].RedriveOf != again.ID {
		t.Fatalf("after the redrive from the dead letters the job's runs are %v (%v), want a redrive of run %d on top", runs, err, again.ID)
	}

	// The pages fit a 375 px wide screen (tables scroll in their box).
	for _, p := range []string{"/ui/", "/ui/jobs", "/ui/jobs/" + strconv.FormatInt(jobID, 10), "/ui/runs/" + strconv.FormatInt(dead.ID, 10), "/ui/live", "/ui/jobs/new",
		"/ui/runs", "/ui/jobs/" + strconv.FormatInt(jobID, 10) + "/edit"} {
		run(t, ctx, "375 px: "+p,
			chromedp.EmulateViewport(375, 800),
			chromedp.Navigate(base+p),
			chromedp.WaitReady(css("body")))
		wide := value(t, ctx, "375 px: "+p, js[bool](`document.documentElement.scrollWidth > window.innerWidth`))
		// The job list's, the dead letters' and a job's runs' tables show
		// their rows without sideways scrolling: every cell within the
		// screen.
		if p == "/ui/jobs" || p == "/ui/runs" || p == "/ui/jobs/"+strconv.FormatInt(jobID, 10) {
			out := value(t, ctx, "375 px: "+p, js[string](`[...document.querySelectorAll("table.stack")].flatMap(t => [...t.querySelectorAll("tbody td")]).filter(td => { const r = td.getBoundingClientRect(); return r.width > 0 && (r.right > window.innerWidth + 1 || r.left < -1) }).map(td => td.dataset.label || td.className || td.textContent.slice(0, 20)).join(", ")`))
			rows := value(t, ctx, "375 px: "+p, js[int](`document.querySelectorAll("table.stack tbody tr").length`))
			if out != "" || rows == 0 {
				t.Errorf("%s at 375 px: %d rows, cells outside the screen: %s", p, rows, out)
			}
		}
		if wide {
			culprits := value(t, ctx, "375 px: "+p, js[string](`[...document.querySelectorAll("body *")].filter(e => e.getBoundingClientRect().right > window.innerWidth + 1).slice(0, 5).map(e => e.tagName + "." + e.className + "#" + e.id + " " + Math.round(e.getBoundingClientRect().right)).join(", ")`))
			t.Errorf("%s is wider than a 375 px screen: %s", p, culprits)
		}
	}
	run(t, ctx, "back to desktop", chromedp.EmulateViewport(1280, 900))

	// Sign out, sign in with the read key: no controls, and the server
	// answers 403 to a form posted anyway.
	run(t, ctx, "sign out and in as a reader",
		chromedp.Navigate(base+"/ui/jobs"),
		// Clicked in the page: chromedp.Click's node id went stale once
		// under load ("Could not find node with given id").
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := js[bool](`(() => { document.querySelector("form.who button").click(); return true })()`)(ctx, tg)
			return err
		}),
		until(`location.pathname === "/ui/login"`, 10*time.Second),
		retryStale(chromedp.WaitVisible(css("#key"))),
		retryStale(chromedp.SendKeys(css("#key"), readKey)),
		click("main form button[type=submit]"),
		until(`document.querySelector("h1") && document.querySelector("h1").textContent === "Overview"`, 10*time.Second),
		chromedp.Navigate(base+"/ui/jobs"),
		retryStale(chromedp.WaitVisible(css("table.list"))))
	controls := value(t, ctx, "count controls", js[int](`document.querySelectorAll("main button, main a.button").length - document.querySelectorAll("form.filters button").length`))
	if controls != 0 {
		t.Errorf("a reader sees %d controls on the job list", controls)
	}
	before, _, _ := e.in.DB.Runs(bg, jobID, sql.RunFilter{Limit: 500})
	run(t, ctx, "post a trigger as a reader",
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := js[bool](`(() => { const f = document.createElement("form"); f.method = "post"; f.action = "/ui/jobs/`+strconv.FormatInt(jobID, 10)+`/trigger";
			const i = document.createElement("input"); i.type = "hidden"; i.name = "csrf"; i.value = document.querySelector("input[name=csrf]").value;
			f.appendChild(i); document.body.appendChild(f); f.submit(); return true })()`)(ctx, tg)
			return err
		}),
		until(`document.querySelector("h1") && document.querySelector("h1").textContent.startsWith("403")`, 10*time.Second))
	after, _, _ := e.in.DB.Runs(bg, jobID, sql.RunFilter{Limit: 500})
	for _, r := range after {
		if r.Trigger == chronos.TriggerManual {
			t.Fatalf("a reader's trigger created run %d (%d runs before, %d after)", r.ID, len(before), len(after))
		}
	}
	// The dead letters: the reader sees them, without a box or a button,
	// and a redrive forged anyway is refused.
	run(t, ctx, "open the dead letters as a reader",
		chromedp.Navigate(base+"/ui/runs"),
		until(`document.querySelectorAll("table.list tbody tr[id^=run-]").length > 0`, 10*time.Second))
	controls = value(t, ctx, "count controls", js[int](`document.querySelectorAll("main input[type=checkbox], main button, main a.button").length - document.querySelectorAll("form.filters button").length`))
	if controls != 0 {
		t.Errorf("a reader sees %d controls on the dead letters", controls)
	}
	run(t, ctx, "post a redrive as a reader",
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := js[bool](`(() => { const f = document.createElement("form"); f.method = "post"; f.action = "/ui/runs/redrive";
			const add = (n, v) => { const i = document.createElement("input"); i.type = "hidden"; i.name = n; i.value = v; f.appendChild(i) };
			add("csrf", document.querySelector("input[name=csrf]").value); add("action", "selected"); add("id", "`+strconv.FormatInt(runs[0].ID, 10)+`");
			document.body.appendChild(f); f.submit(); return true })()`)(ctx, tg)
			return err
		}),
		until(`document.querySelector("h1") && document.querySelector("h1").textContent.startsWith("403")`, 10*time.Second))
	if n, _, _ := e.in.DB.Runs(bg, dj.ID, sql.RunFilter{}); len(n) != 3 {
		t.Errorf("a reader's forged redrive: the job has %d runs, want 3", len(n))
	}

	// Nothing supplied by a user or a target ran, and the pages reported
	// no errors.
	pwned := value(t, ctx, "check for executed script", js[string](`String(window.__pwned)`))
	if pwned != "undefined" {
		t.Errorf("supplied script ran: window.__pwned = %s", pwned)
	}
	if errs := blog.Errors(); len(errs) > 0 {
		t.Errorf("the browser reported errors:\n%s", strings.Join(errs, "\n"))
	}
}
