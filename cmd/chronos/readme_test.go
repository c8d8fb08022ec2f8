package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronoshq/chronos/reactor"
)

// TestReadmeDocumentsEveryVariable: the configuration table of the README
// has a row for every variable serve reads.
func TestReadmeDocumentsEveryVariable(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range serveVars {
		if !strings.Contains(string(b), "| `"+v.name+"` |") {
			t.Errorf("README.md has no configuration row for %s", v.name)
		}
	}
}

// verifyFromReadme is the README's signature check, word for word.
func verifyFromReadme(secret []byte, r *http.Request, body []byte) bool {
	ts := r.Header.Get("X-Chronos-Timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return false
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	want := "v1=" + hex.EncodeToString(mac.Sum(nil))
	return hmac.Equal([]byte(want), []byte(r.Header.Get("X-Chronos-Signature")))
}

// TestReadmeSignatureSample: the README's sample accepts what the reactor
// signs and refuses a tampered body or an old timestamp.
func TestReadmeSignatureSample(t *testing.T) {
	t.Parallel()
	secret, body := []byte("dev-secret"), []byte(`{"msg":"hi"}`)
	for _, tc := range []struct {
		name string
		age  time.Duration
		sent []byte
		want bool
	}{
		{"fresh", 0, body, true},
		{"tampered", 0, []byte(`{"msg":"ho"}`), false},
		{"replayed", 10 * time.Minute, body, false},
	} {
		ts := strconv.FormatInt(time.Now().Add(-tc.age).Unix(), 10)
		r := httptest.NewRequest("POST", "/", nil)
		r.Header.Set(reactor.HeaderTimestamp, ts)
		r.Header.Set(reactor.HeaderSignature, reactor.Sign(secret, ts, body))
		if got := verifyFromReadme(secret, r, tc.sent); got != tc.want {
			t.Errorf("%s: verify = %v, want %v", tc.name, got, tc.want)
		}
	}
}
