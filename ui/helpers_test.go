package ui_test

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/reactor"
	"github.com/chronoshq/chronos/reactor/reactortest"
	"github.com/chronoshq/chronos/sql/sqltest"
	"github.com/chronoshq/chronos/ui"
)

// Keys of the test consoles: a writer and a reader.
const (
	writeKey = "w-secret-key"
	readKey  = "r-secret-key"
)

var testKeys = []string{"ops:write:" + writeKey, "viewer:read:" + readKey}

// env is a console on a fresh database, optionally with a running reactor
// and listener on the same bus (a whole instance but for the API).
type env struct {
	in      *reactortest.Instance
	console *ui.Console
	srv     *httptest.Server
}

// newEnv serves a console over a fresh database. With live, a listener and
// a reactor run on the instance's bus, as in chronos serve.
func newEnv(t *testing.T, live bool) *env {
	t.Helper()
	return newEnvAs(t, live, "")
}

// newEnvAs is newEnv with the instance named name (a unique name when "").
func newEnvAs(t *testing.T, live bool, name string) *env {
	t.Helper()
	dsn := sqltest.NewURL(t)
	in := reactortest.NewInstance(t, dsn, name)
	c := ui.New(ui.Config{Instance: in.Name, APIKeys: testKeys, TargetPolicy: chronos.TargetPolicy{AllowPrivate: true}}, in.DB, in.Bus, in.Log)
	srv := httptest.NewServer(c.Handler())
	// Cleanups run last-in first: end the event streams, then the server.
	t.Cleanup(srv.Close)
	t.Cleanup(c.Close)
	if live {
		in.StartListener(t, dsn, 0)
		cfg := reactor.Config{DSN: dsn, Instance: in.Name, AllowPrivateTargets: true, WorkerConcurrency: 4}
		cfg.IdlePollInterval, cfg.LeaderPollInterval, cfg.ShutdownTimeout = reactortest.Timings(0, 0, 0)
		r := reactor.New(cfg, in.DB, in.Bus, in.Log)
		in.Go(r.Run)
	}
	return &env{in: in, console: c, srv: srv}
}

// signedIn runs t in parallel with the other tests of the package, on a
// console of its own over a fresh database (no reactor), with a client
// signed in with key.
func signedIn(t *testing.T, key string) (*env, *client) {
	t.Helper()
	t.Parallel()
	e := newEnv(t, false)
	c := e.client(t)
	c.signIn(key)
	return e, c
}

// client is a browser without a browser: a cookie jar, no redirects
// followed unless asked.
type client struct {
	t    *testing.T
	base string
	hc   *http.Client
}

func (e *env) client(t *testing.T) *client {
	jar, _ := cookiejar.New(nil)
	return &client{t: t, base: e.srv.URL, hc: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// do sends a request and returns the status, the Location and the body.
func (c *client) do(method, path string, form url.Values, hdr map[string]string) (int, string, string) {
	c.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(context.Background(), method, c.base+path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(b)
}

func (c *client) get(path string) (int, string) {
	c.t.Helper()
	code, _, body := c.do("GET", path, nil, nil)
	return code, body
}

// signIn signs in with key and fails the test unless it worked.
func (c *client) signIn(key string) {
	c.t.Helper()
	code, loc, _ := c.do("POST", "/ui/login", url.Values{"key": {key}, "next": {"/ui/jobs"}}, nil)
	if code != http.StatusSeeOther || loc != "/ui/jobs" {
		c.t.Fatalf("sign in: %d to %q, want 303 to /ui/jobs", code, loc)
	}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the CSRF token of the signed-in session, read from a page.
func (c *client) csrf() string {
	c.t.Helper()
	_, body := c.get("/ui/jobs")
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		c.t.Fatalf("no CSRF token on /ui/jobs:\n%s", body)
	}
	return m[1]
}

// post submits a form with the session's CSRF token.
func (c *client) post(path string, form url.Values) (int, string, string) {
	c.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", c.csrf())
	return c.do("POST", path, form, nil)
}

// countRuns is how many runs the job has.
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
