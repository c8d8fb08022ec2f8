package main

import (
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/reactor"
)

func TestReceiverSignatureAndFailures(t *testing.T) {
	t.Parallel()
	out := newLines()
	rc := &receiver{secret: []byte("s3cret"), status: 200, failFirst: 1, out: out, seen: map[string]int{}}
	body := `{"a": 1}`
	now := strconv.FormatInt(time.Now().Unix(), 10)
	old := strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10)
	for _, tc := range []struct {
		name      string
		run       string
		ts, sig   string
		wantCode  int
		wantMatch string
	}{
		{"first delivery fails (--fail-first 1)", "7", now, reactor.Sign([]byte("s3cret"), now, []byte(body)), 503, `run=7 attempt=1 scheduled=2026-12-02T14:00:00Z lag=\S+ sig=ok -> 503 body={"a":1}`},
		{"second delivery succeeds", "7", now, reactor.Sign([]byte("s3cret"), now, []byte(body)), 200, `run=7 attempt=1 .* sig=ok -> 200`},
		{"bad signature", "8", now, reactor.Sign([]byte("other"), now, []byte(body)), 401, `run=8 .* sig=bad -> 401`},
		{"no signature", "9", "", "", 401, `run=9 .* sig=absent -> 401`},
		{"stale timestamp", "10", old, reactor.Sign([]byte("s3cret"), old, []byte(body)), 401, `run=10 .* sig=stale -> 401`},
	} {
		req := httptest.NewRequest("POST", "/hook", strings.NewReader(body))
		req.Header.Set(reactor.HeaderRunID, tc.run)
		req.Header.Set(reactor.HeaderAttempt, "1")
		req.Header.Set(reactor.HeaderScheduledAt, "2026-12-02T14:00:00Z")
		if tc.sig != "" {
			req.Header.Set(reactor.HeaderTimestamp, tc.ts)
			req.Header.Set(reactor.HeaderSignature, tc.sig)
		}
		w := httptest.NewRecorder()
		rc.ServeHTTP(w, req)
		if w.Code != tc.wantCode {
			t.Errorf("%s: answered %d, want %d", tc.name, w.Code, tc.wantCode)
		}
		out.wait(t, `POST /hook `+tc.wantMatch, 10*time.Second)
	}
}

func TestReceiverWithoutSecret(t *testing.T) {
	t.Parallel()
	out := newLines()
	rc := &receiver{status: 500, out: out, seen: map[string]int{}}
	req := httptest.NewRequest("PUT", "/x?y=1", strings.NewReader("not json\n"))
	req.Header.Set(reactor.HeaderSignature, "v1=abc")
	w := httptest.NewRecorder()
	rc.ServeHTTP(w, req)
	if w.Code != 500 || !strings.Contains(w.Body.String(), "status 500 asked for") {
		t.Errorf("answered %d %q, want 500 saying why", w.Code, w.Body.String())
	}
	out.wait(t, `PUT /x\?y=1 run=- attempt=- sig=unchecked -> 500 body="not json\\n"$`, 10*time.Second)

	// A /status/NNN path overrides --status.
	rc.status = 200
	for path, want := range map[string]int{"/status/503": 503, "/a/status/204/": 204, "/status/99": 200, "/status/x": 200} {
		w := httptest.NewRecorder()
		rc.ServeHTTP(w, httptest.NewRequest("POST", path, nil))
		if w.Code != want {
			t.Errorf("POST %s: %d, want %d", path, w.Code, want)
		}
	}
}

func TestCompactBody(t *testing.T) {
	t.Parallel()
	if got := compactBody(nil); got != "(empty)" {
		t.Errorf("empty: %q", got)
	}
	long := `"` + strings.Repeat("x", 1000) + `"`
	if got := compactBody([]byte(long)); len(got) > receivePrintBody+30 || !strings.HasSuffix(got, "(1002 bytes)") {
		t.Errorf("long body: %q", got)
	}
}

// TestReceiverStandardWebhooks: receive verifies the Standard Webhooks
// headers with a job's whsec_ secret or the plain SIGNING_SECRET.
func TestReceiverStandardWebhooks(t *testing.T) {
	t.Parallel()
	body := []byte(`{"a": 1}`)
	now := time.Now()
	ts := strconv.FormatInt(now.Unix(), 10)
	old := strconv.FormatInt(now.Add(-time.Hour).Unix(), 10)
	jobSecret := chronos.NewSigningSecret()
	sign := func(secret, id, ts string) string {
		return reactor.SignWebhook(chronos.SigningKey(secret), id, ts, body)
	}
	for _, tc := range []struct {
		name, secret, id, ts, sig, want string
	}{
		{"job secret", jobSecret, "run_7", ts, sign(jobSecret, "run_7", ts), "ok"},
		{"cluster secret", "s3cret", "run_7", ts, sign("s3cret", "run_7", ts), "ok"},
		{"one of two during rotation", jobSecret, "run_7", ts, sign("other", "run_7", ts) + " " + sign(jobSecret, "run_7", ts), "ok"},
		{"another job's secret", jobSecret, "run_7", ts, sign(chronos.NewSigningSecret(), "run_7", ts), "bad"},
		{"id swapped", jobSecret, "run_8", ts, sign(jobSecret, "run_7", ts), "bad"},
		{"stale", jobSecret, "run_7", old, sign(jobSecret, "run_7", old), "stale"},
		{"forged and stale", jobSecret, "run_7", old, sign("other", "run_7", old), "bad"},
		{"no id", jobSecret, "", ts, sign(jobSecret, "", ts), "absent"},
		{"no secret to check", "", "run_7", ts, sign(jobSecret, "run_7", ts), "unchecked"},
	} {
		rc := &receiver{secret: []byte(tc.secret)}
		req := httptest.NewRequest("POST", "/hook", nil)
		if tc.id != "" {
			req.Header.Set(reactor.HeaderWebhookID, tc.id)
		}
		req.Header.Set(reactor.HeaderWebhookTimestamp, tc.ts)
		req.Header.Set(reactor.HeaderWebhookSignature, tc.sig)
		if got := rc.checkSignature(req, body, now); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
