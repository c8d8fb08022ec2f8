package reactor

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
)

func testJob(url string) *chronos.Job {
	j := &chronos.Job{ID: 7, Name: "t", TargetURL: url}
	j.ApplyDefaults()
	return j
}

func testRun() *chronos.Run {
	return &chronos.Run{ID: 42, JobID: 7, AttemptCount: 3, ScheduledAt: time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)}
}

func newTestExecutor(t *testing.T, cfg Config) *executor {
	t.Helper()
	cfg = cfg.withDefaults()
	e := newExecutor(cfg)
	t.Cleanup(e.close)
	return e
}

func TestExecutorHeadersAndBody(t *testing.T) {
	t.Parallel()
	type seen struct {
		method string
		header http.Header
		body   string
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.Header.Clone(), string(b)}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	secret := "s3cret"
	e := newTestExecutor(t, Config{AllowPrivateTargets: true, SigningSecret: secret})
	job := testJob(srv.URL + "/hook")
	job.Method = http.MethodPut
	job.Headers = map[string]string{"X-Env": "prod"}
	job.Payload = json.RawMessage(`{"report":"daily"}`)
	res := e.do(t.Context(), job, testRun())
	if !res.Success() || res.StatusCode != http.StatusNoContent {
		t.Fatalf("result = %+v, want success 204", res)
	}
	s := <-got
	if s.method != http.MethodPut || s.body != `{"report":"daily"}` {
		t.Errorf("method %s body %q", s.method, s.body)
	}
	want := map[string]string{
		"X-Chronos-Run-Id":       "42",
		"X-Chronos-Attempt":      "3",
		"X-Chronos-Scheduled-At": "2026-03-01T12:00:00.123456789Z",
		"User-Agent":             "chronos",
		"Content-Type":           "application/json",
		"X-Env":                  "prod",
	}
	for k, v := range want {
		if g := s.header.Get(k); g != v {
			t.Errorf("header %s = %q, want %q", k, g, v)
		}
	}
	ts := s.header.Get(HeaderTimestamp)
	if ts == "" {
		t.Fatal("no timestamp header")
	}
	sig := s.header.Get(HeaderSignature)
	if !VerifySignature([]byte(secret), ts, []byte(s.body), sig) {
		t.Errorf("signature %q does not verify", sig)
	}
	if VerifySignature([]byte("other"), ts, []byte(s.body), sig) {
		t.Error("signature verifies under the wrong secret")
	}
	if !strings.HasPrefix(sig, "v1=") || len(sig) != 3+64 {
		t.Errorf("signature %q is not v1=<64 hex>", sig)
	}
}

func TestSignKnownVector(t *testing.T) {
	t.Parallel()
	// HMAC-SHA256("key", "1700000000.{}"), computed independently with
	// `printf '1700000000.{}' | openssl dgst -sha256 -hmac key`.
	got := Sign([]byte("key"), "1700000000", []byte("{}"))
	want := "v1=9d713ed406bb7076d4123f0dc2c39d2df5c654ed4b0cd56b52c8b4c940bd63ae"
	if got != want {
		t.Fatalf("Sign = %q, want %q", got, want)
	}
}

func TestExecutorNoPayloadNoBody(t *testing.T) {
	t.Parallel()
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if len(b) != 0 {
			t.Errorf("body %q, want none", b)
		}
		got <- r.Header.Clone()
	}))
	defer srv.Close()
	e := newTestExecutor(t, Config{AllowPrivateTargets: true, SigningSecret: "k"})
	res := e.do(t.Context(), testJob(srv.URL), testRun())
	if !res.Success() {
		t.Fatalf("result %+v", res)
	}
	h := <-got
	if h.Get("Content-Type") != "" {
		t.Errorf("Content-Type %q without a payload", h.Get("Content-Type"))
	}
	if !VerifySignature([]byte("k"), h.Get(HeaderTimestamp), nil, h.Get(HeaderSignature)) {
		t.Error("signature over the empty body does not verify")
	}
}

func TestExecutorRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	var hit atomic.Int32
	dest := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit.Add(1) }))
	defer dest.Close()
	for _, code := range []int{300, 301, 302, 303, 307, 308} {
		src := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, dest.URL, code)
		}))
		e := newTestExecutor(t, Config{AllowPrivateTargets: true})
		res := e.do(t.Context(), testJob(src.URL), testRun())
		src.Close()
		if res.Success() || res.StatusCode != code || res.Err == "" {
			t.Errorf("%d: result %+v, want a failure with the status recorded", code, res)
		}
	}
	if n := hit.Load(); n != 0 {
		t.Errorf("redirect target hit %d times", n)
	}
}

func TestExecutorStatuses(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var code int
		switch r.URL.Path {
		case "/200":
			code = 200
		case "/201":
			code = 201
		case "/299":
			code = 299
		case "/404":
			code = 404
		case "/500":
			code = 500
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, strings.Repeat("x", 10<<10))
	}))
	defer srv.Close()
	e := newTestExecutor(t, Config{AllowPrivateTargets: true})
	for path, ok := range map[string]bool{"/200": true, "/201": true, "/299": true, "/404": false, "/500": false} {
		res := e.do(t.Context(), testJob(srv.URL+path), testRun())
		if res.Success() != ok {
			t.Errorf("%s: success %v, want %v (%+v)", path, res.Success(), ok, res.Err)
		}
		if len(res.Body) != maxStoredBody {
			t.Errorf("%s: stored body %d bytes, want %d", path, len(res.Body), maxStoredBody)
		}
	}
}

func TestExecutorRetryAfter(t *testing.T) {
	t.Parallel()
	date := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/429":
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(429)
		case "/503":
			w.Header().Set("Retry-After", date)
			w.WriteHeader(503)
		case "/500":
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(500)
		case "/huge":
			w.Header().Set("Retry-After", "99999999999")
			w.WriteHeader(429)
		}
	}))
	defer srv.Close()
	e := newTestExecutor(t, Config{AllowPrivateTargets: true})
	job := testJob(srv.URL)
	job.Backoff = chronos.BackoffLinear
	job.BackoffBaseSeconds = 1
	job.BackoffMaxSeconds = 60

	res := e.do(t.Context(), testJob(srv.URL+"/429"), testRun())
	if d := retryDelay(job, 1, res); d != 7*time.Second {
		t.Errorf("429 Retry-After: 7 gives %s", d)
	}
	res = e.do(t.Context(), testJob(srv.URL+"/503"), testRun())
	if d := retryDelay(job, 1, res); d != 60*time.Second {
		t.Errorf("503 Retry-After in 90s, cap 60s, gives %s", d)
	}
	job.BackoffMaxSeconds = 600
	if d := retryDelay(job, 1, res); d < 80*time.Second || d > 91*time.Second {
		t.Errorf("503 Retry-After in 90s gives %s", d)
	}
	res = e.do(t.Context(), testJob(srv.URL+"/500"), testRun())
	if d := retryDelay(job, 2, res); d != 2*time.Second {
		t.Errorf("500 ignores Retry-After: got %s, want linear 2s", d)
	}
	res = e.do(t.Context(), testJob(srv.URL+"/huge"), testRun())
	if d := retryDelay(job, 1, res); d != 600*time.Second {
		t.Errorf("huge Retry-After gives %s, want the cap", d)
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		in string
		d  time.Duration
		ok bool
	}{
		{"", 0, false},
		{"abc", 0, false},
		{"0", 0, true},
		{"-5", 0, true},
		{" 12 ", 12 * time.Second, true},
		{now.Add(30 * time.Second).Format(http.TimeFormat), 30 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
	}
	for _, c := range cases {
		d, ok := parseRetryAfter(c.in, now)
		if d != c.d || ok != c.ok {
			t.Errorf("parseRetryAfter(%q) = %s, %v; want %s, %v", c.in, d, ok, c.d, c.ok)
		}
	}
}

func TestExecutorRefusesPrivateTargets(t *testing.T) {
	t.Parallel()
	var hit atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit.Add(1) }))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	e := newTestExecutor(t, Config{AllowPrivateTargets: false})
	// A literal loopback address, and a name that resolves to one: the
	// check runs at dial time, on the resolved address.
	for _, u := range []string{srv.URL, "http://localhost" + port} {
		res := e.do(t.Context(), testJob(u), testRun())
		if res.Success() || !strings.Contains(res.Err, "refused") {
			t.Errorf("%s: result %+v, want refused", u, res)
		}
	}
	if n := hit.Load(); n != 0 {
		t.Errorf("private target hit %d times", n)
	}
}

func TestExecutorRefusesMetadataAlways(t *testing.T) {
	t.Parallel()
	e := newTestExecutor(t, Config{AllowPrivateTargets: true})
	for _, u := range []string{"http://169.254.169.254/latest/meta-data/", "http://[::ffff:169.254.169.254]/", "http://169.254.170.2/v2/credentials", "http://100.100.100.200/", "http://[fd00:ec2::254]/"} {
		res := e.do(t.Context(), testJob(u), testRun())
		if res.Success() || !strings.Contains(res.Err, "refused") {
			t.Errorf("%s: result %+v, want refused", u, res)
		}
	}
	private := chronos.TargetPolicy{AllowPrivate: true}
	for _, a := range []string{"169.254.169.254:80", "[::ffff:169.254.169.254]:80", "169.254.170.2:80", "100.100.100.200:80", "[fd00:ec2::254]:80"} {
		if err := checkDialAddress(a, private); err == nil {
			t.Errorf("checkDialAddress(%s, allowPrivate) = nil", a)
		}
	}
	for _, a := range []string{"10.0.0.1:80", "192.168.1.1:443", "127.0.0.1:80", "[::1]:80", "[fe80::1%eth0]:80", "0.0.0.0:80", "100.64.0.1:80", "198.18.0.1:80", "[64:ff9b::a00:1]:80"} {
		if err := checkDialAddress(a, chronos.TargetPolicy{}); err == nil {
			t.Errorf("checkDialAddress(%s) = nil, want refused", a)
		}
	}
	if err := checkDialAddress("93.184.216.34:443", chronos.TargetPolicy{}); err != nil {
		t.Errorf("public address refused: %v", err)
	}
}

func TestExecutorTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(hangUntil(release))
	defer srv.Close()
	defer close(release)
	e := newTestExecutor(t, Config{AllowPrivateTargets: true})
	job := testJob(srv.URL)
	job.TimeoutSeconds = 1
	start := time.Now()
	res := e.do(t.Context(), job, testRun())
	if res.Success() || !strings.Contains(res.Err, "timeout") {
		t.Errorf("result %+v, want a timeout", res)
	}
	if el := time.Since(start); el < time.Second || el > 15*time.Second {
		t.Errorf("timed out after %s, want the job's timeout of 1s (and not much later)", el)
	}
}

func TestSanitizeBody(t *testing.T) {
	t.Parallel()
	if got := sanitizeBody([]byte("a\x00b\xffc")); got != "ab\uFFFDc" {
		t.Errorf("sanitizeBody = %q", got)
	}
}
