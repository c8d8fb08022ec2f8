package ui_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromiumPath finds the browser the tests drive. Without one the browser
// tests fail (never skip): the console is only tested when they run.
func chromiumPath(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatal("Chromium is not installed, and the console's browser tests need it: " +
		"install it with `apt-get install -y chromium` (Debian; .ci/run does this), " +
		"or set CHROMIUM to the path of a Chromium or Chrome binary")
	return ""
}

// browserLog collects what the page reports as errors: uncaught
// exceptions, console.error, and the browser's own error entries (a
// content-security-policy violation among them). HTTP error statuses,
// which the browser also logs, are left out: the tests provoke some.
type browserLog struct {
	mu     sync.Mutex
	errors []string
}

func (l *browserLog) add(s string) {
	if abortedRequest(s) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errors = append(l.errors, s)
}

// abortedRequest reports whether s is htmx telling of a request the
// browser cancelled: a click or a navigation that leaves the page while
// one of its htmx requests is in flight (the job page polls its runs; on
// a loaded machine a test's click lands during a poll). A person sees
// nothing of it. htmx logs the abort as two errors, htmx:afterRequest and
// htmx:sendAbort; a failed request's afterRequest comes with
// htmx:sendError or htmx:timeout, and an error status with
// htmx:responseError, which still count.
func abortedRequest(s string) bool {
	return strings.HasPrefix(s, `console.error: "htmx:sendAbort`) || strings.HasPrefix(s, `console.error: "htmx:afterRequest`)
}

// Errors returns what was collected so far.
func (l *browserLog) Errors() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.errors...)
}

// newBrowser starts a headless Chromium for the test (stopped at cleanup)
// with a viewport of w×h and the system colour scheme dark or light, and
// returns its context and its error log. Every flag keeps it off the
// network: it only ever talks to the test's 127.0.0.1 servers.
func newBrowser(t *testing.T, w, h int, dark bool) (context.Context, *browserLog) {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless,
		chromedp.NoSandbox, // tests run as root in CI
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(w, h),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-features", "Translate,OptimizationHints,MediaRouter,AutofillServerCommunication"),
		chromedp.Flag("no-proxy-server", true),
		chromedp.Flag("hide-scrollbars", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	bl := &browserLog{}
	err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			bl.add(fmt.Sprintf("exception: %s at %s:%d", msg, d.URL, d.LineNumber))
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, a.Description+string(a.Value))
				}
				bl.add("console." + string(ev.Type) + ": " + strings.Join(parts, " "))
			}
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError && ev.Entry.Source != cdplog.EntrySourceNetwork {
				bl.add(fmt.Sprintf("log (%s): %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
			}
		}
	})
	if err != nil {
		t.Fatalf("start Chromium (%s): %v", chromiumPath(t), err)
	}
	scheme := "light"
	if dark {
		scheme = "dark"
	}
	if _, err := chromedp.Call(ctx, runtime.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("Runtime.enable: %v", err)
	}
	if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("Log.enable: %v", err)
	}
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}); err != nil {
		t.Fatalf("emulate prefers-color-scheme: %v", err)
	}
	return ctx, bl
}

// stepTimeout bounds one step of a browser test.
const stepTimeout = time.Minute

// run runs browser actions in order and fails the test, naming the step,
// on error.
func run(t *testing.T, ctx context.Context, step string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(sctx, actions...); err != nil {
		t.Fatalf("browser: %s: %v", step, err)
	}
}

// value runs one action and returns its value, failing the test on error.
func value[T any](t *testing.T, ctx context.Context, step string, a chromedp.Action[T]) T {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(sctx, a)
	if err != nil {
		t.Fatalf("browser: %s: %v", step, err)
	}
	return v
}

// until waits for a JavaScript expression to be true in a page that has
// finished loading. It evaluates the expression every 50 ms and rides
// over navigations (an evaluation that a page load interrupts is tried
// again), which a click on a submit button starts. A page still loading
// does not count: Chromium shows a page as it parses it, and on a loaded
// machine a condition on its top (the notice) was met while a section
// further down held only its first line (TestBrowserEditsEveryField read
// the fire times as "\n").
func until(expr string, d time.Duration) chromedp.Action[chromedp.Void] {
	probe := chromedp.Evaluate[bool]("(() => { try { return document.readyState === 'complete' && !!(" + expr + ") } catch (e) { return false } })()")
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		deadline := time.Now().Add(d)
		var last error
		for {
			ok, err := probe(ctx, tg)
			if err == nil && ok {
				return chromedp.Void{}, nil
			}
			if err != nil {
				last = err
			}
			if time.Now().After(deadline) {
				return chromedp.Void{}, fmt.Errorf("waited %s for %s (last error: %v)", d, expr, last)
			}
			select {
			case <-ctx.Done():
				return chromedp.Void{}, ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// browserSignIn signs the browser in with the writer's key through the sign-in
// form at base+"/ui/login" and waits for the overview.
func browserSignIn(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	run(t, ctx, "sign in",
		chromedp.Navigate(base+"/ui/login"),
		chromedp.WaitVisible(css("#key")),
		chromedp.SendKeys(css("#key"), writeKey),
		click("main form button[type=submit]"),
		until(`location.pathname === "/ui/"`, 10*time.Second))
}

// tabTo presses Tab until the element sel matches has the focus, failing
// the test (naming what) after 60 presses.
func tabTo(t *testing.T, ctx context.Context, sel, what string) {
	t.Helper()
	for i := 0; ; i++ {
		if value(t, ctx, "focus", js[bool](`document.activeElement === document.querySelector('`+sel+`')`)) {
			return
		}
		if i == 60 {
			t.Fatalf("60 presses of Tab never reached %s", what)
		}
		run(t, ctx, "Tab", chromedp.KeyEvent("\t"))
	}
}

// js evaluates a JavaScript expression into a value of type T.
func js[T any](expr string) chromedp.Action[T] { return chromedp.Evaluate[T](expr) }

// css selects the first element matching a CSS selector.
func css(sel string) chromedp.CSS { return chromedp.CSS(sel) }

// click clicks the first element sel matches, with the mouse, as a person
// would. Should the page replace that element between the query and the
// click (a live refresh of the page, or a page still settling after a
// redirect: "Could not find node with given id"), it queries again, up
// to three times: the element is there, only its node id went stale.
func click(sel string) chromedp.Action[chromedp.Void] {
	return retryStale(chromedp.Click(css(sel)))
}

// retryStale runs a, and again (up to three times in all) while the
// browser answers that the node it found went stale: a page still
// settling after a navigation replaced it. Each try queries anew.
func retryStale(a chromedp.Action[chromedp.Void]) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		var err error
		for range 3 {
			if _, err = a(ctx, tg); err == nil || !staleNode(err) {
				return err
			}
		}
		return err
	})
}

// staleNode tells whether err is the browser's answer to a node id of an
// element the page has since replaced.
func staleNode(err error) bool {
	s := err.Error()
	return strings.Contains(s, "Could not find node with given id") || strings.Contains(s, "No node with given id found") ||
		strings.Contains(s, "Node is detached from document")
}
