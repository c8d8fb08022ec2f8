package http

import (
	"context"
	nethttp "net/http"
	"strconv"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
)

func TestRateLimitPerKey(t *testing.T) {
	e := parallelEnv(t, func(c *Config) { c.RateLimit = 0.5; c.RateBurst = 3 })
	for i := 0; i < 3; i++ {
		wantStatus(t, e.do("GET", "/v1/jobs", nil), nethttp.StatusOK)
	}
	w := e.do("GET", "/v1/jobs", nil)
	wantStatus(t, w, nethttp.StatusTooManyRequests)
	if errorOf(t, w).Code != chronos.ERATELIMITED {
		t.Fatalf("body %s", w.Body.String())
	}
	if s, err := strconv.Atoi(w.Header().Get("Retry-After")); err != nil || s < 1 || s > 2 {
		t.Fatalf("Retry-After %q", w.Header().Get("Retry-After"))
	}
	// Another key has its own bucket; a refused request cost nothing, and
	// a wrong key is a 401, not a 429.
	wantStatus(t, e.doKey("GET", "/v1/jobs", nil, "other-key"), nethttp.StatusOK)
	wantStatus(t, e.doKey("GET", "/v1/jobs", nil, "wrong"), nethttp.StatusUnauthorized)
	// Open routes are never limited.
	wantStatus(t, e.doKey("GET", "/healthz", nil, ""), nethttp.StatusOK)

	open := newEnvDB(t, e.db, func(c *Config) { c.AuthDisabled = true; c.APIKeys = nil; c.RateLimit = 0.5; c.RateBurst = 1 })
	for i := 0; i < 5; i++ {
		wantStatus(t, open.doKey("GET", "/v1/jobs", nil, ""), nethttp.StatusOK)
	}
	unlimited := newEnvDB(t, e.db, func(c *Config) { c.RateLimit = -1 })
	for i := 0; i < 50; i++ {
		wantStatus(t, unlimited.do("GET", "/v1/jobs", nil), nethttp.StatusOK)
	}
}

func TestTapStreamCap(t *testing.T) {
	t.Parallel()
	e := newEnvDB(t, nil, func(c *Config) { c.MaxTapStreams = 2 })
	first, ts := openTap(t, e, "")
	openTap(t, e, "")
	call := func(key string) *nethttp.Response {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		req, _ := nethttp.NewRequestWithContext(ctx, "GET", ts.URL+"/v1/events", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	if r := call(testKey); r.StatusCode != nethttp.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
		t.Fatalf("third stream of a key: %d %v", r.StatusCode, r.Header)
	}
	if r := call("other-key"); r.StatusCode != nethttp.StatusOK {
		t.Fatalf("another key's stream: %d", r.StatusCode)
	}
	// A stream that ends gives its slot back.
	first.cancel()
	first.resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := e.srv.limits.taps.Open("key-" + keyHashPrefix(testKey))
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slot not released: %d streams counted", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if r := call(testKey); r.StatusCode != nethttp.StatusOK {
		t.Fatalf("stream after one ended: %d", r.StatusCode)
	}
}

func keyHashPrefix(k string) string {
	key, _ := ParseAPIKey(k)
	return key.Name[len("key-"):]
}
