package main

import (
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestHealth(t *testing.T) {
	t.Parallel()
	var unready atomic.Bool
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if r.URL.Path != "/readyz" || unready.Load() {
			w.WriteHeader(nethttp.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	// The default URL comes from HTTP_ADDR: a wildcard host means loopback.
	for _, addr := range []string{":" + port, "0.0.0.0:" + port, "127.0.0.1:" + port} {
		if code, out, errOut := runCmd(t, map[string]string{"HTTP_ADDR": addr}, "health"); code != 0 || !strings.Contains(out, "200") {
			t.Errorf("HTTP_ADDR=%s: exit %d, stdout %q, stderr %q", addr, code, out, errOut)
		}
	}
	unready.Store(true)
	if code, _, errOut := runCmd(t, map[string]string{"HTTP_ADDR": ":" + port}, "health"); code != 1 || !strings.Contains(errOut, "503") {
		t.Errorf("unready instance: exit %d, stderr %q; want 1 naming the 503", code, errOut)
	}
	if code, _, _ := runCmd(t, nil, "health", "--url", "http://127.0.0.1:1/readyz"); code != 1 {
		t.Errorf("nothing listening: exit %d, want 1", code)
	}
	if code, _, _ := runCmd(t, map[string]string{"HTTP_ADDR": "nope"}, "health"); code != 2 {
		t.Errorf("bad HTTP_ADDR: exit %d, want 2", code)
	}
}

// The receiver answers its health probe without printing a delivery.
func TestReceiveHealthz(t *testing.T) {
	t.Parallel()
	var delivered int
	h := withHealthz(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) { delivered++ }))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/healthz", nil))
	if w.Code != 200 || delivered != 0 {
		t.Fatalf("GET /healthz: %d, %d deliveries", w.Code, delivered)
	}
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("POST", "/healthz", nil))
	if delivered != 1 {
		t.Fatal("a delivery to /healthz was swallowed")
	}
}
