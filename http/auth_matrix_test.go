package http

import (
	"context"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/chronoshq/chronos"
)

const readKey = "read-key-0123456789"

// openRoutes are the only routes served without a key. A route added
// outside /v1 fails TestAuthMatrix until it is listed here on purpose.
var openRoutes = map[string]bool{
	"GET /healthz": true, "GET /readyz": true, "GET /metrics": true, "GET /openapi.yaml": true,
}

// TestAuthMatrix: every route of the router × {no key, wrong key, read
// key, write key}. /v1 routes answer 401 with the JSON envelope and
// WWW-Authenticate without a valid key; a read key passes GET routes (the
// event tap included) and gets 403 on every other; a write key passes
// everything. Unknown /v1 paths and methods answer 401 without a valid
// key, and 404/405 with one. The request log names the key.
func TestAuthMatrix(t *testing.T) {
	e := parallelEnv(t, func(c *Config) { c.APIKeys = append(c.APIKeys, "viewer:read:"+readKey) })
	job := e.createJob(cronJob("matrix"))
	id := itoa64(job.ID)

	type key struct{ name, header string }
	keys := []key{{"none", ""}, {"wrong", "Bearer wrong-key"}, {"read", "Bearer " + readKey}, {"write", "Bearer " + testKey}}
	call := func(method, path, auth string) *httptest.ResponseRecorder {
		ctx := context.Background()
		if path == "/v1/events" {
			// The tap streams until its client leaves: leave at once.
			c, cancel := context.WithCancel(ctx)
			cancel()
			ctx = c
		}
		req := httptest.NewRequestWithContext(ctx, method, path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		return e.serve(req)
	}
	guarded := 0
	for _, r := range e.srv.engine.Routes() {
		path := strings.ReplaceAll(r.Path, ":id", id)
		route := r.Method + " " + r.Path
		if !strings.HasPrefix(r.Path, "/v1/") {
			if !openRoutes[route] {
				t.Errorf("%s is outside /v1 and not a known open route: guard it or list it in openRoutes", route)
			}
			for _, k := range keys {
				if w := call(r.Method, path, k.header); w.Code == 401 || w.Code == 403 {
					t.Errorf("open route %s with %s key: %d", route, k.name, w.Code)
				}
			}
			continue
		}
		guarded++
		for _, k := range keys {
			w := call(r.Method, path, k.header)
			switch {
			case k.name == "none" || k.name == "wrong":
				if w.Code != nethttp.StatusUnauthorized || errorOf(t, w).Code != chronos.EUNAUTHORIZED ||
					!strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("%s with %s key: %d %s", route, k.name, w.Code, w.Body.String())
				}
			case k.name == "read" && r.Method != nethttp.MethodGet:
				if w.Code != nethttp.StatusForbidden || errorOf(t, w).Code != chronos.EFORBIDDEN {
					t.Errorf("%s with read key: %d %s, want 403 forbidden", route, w.Code, w.Body.String())
				}
			default:
				if w.Code == nethttp.StatusUnauthorized || w.Code == nethttp.StatusForbidden || w.Code >= 500 && w.Code != statusClientClosed {
					t.Errorf("%s with %s key: %d %s", route, k.name, w.Code, w.Body.String())
				}
			}
		}
	}
	if guarded < 10 {
		t.Fatalf("only %d /v1 routes found", guarded)
	}

	// Unknown paths and methods under /v1.
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
		for _, p := range []string{"/v1", "/v1/", "/v1/nope", "/v1/jobs/", "/v1/jobs/" + id + "/nope", "/v1/jobs", "/v1/events"} {
			for _, k := range keys {
				w := call(m, p, k.header)
				if w.Code >= 200 && w.Code < 300 || w.Code == statusClientClosed {
					continue // a real route
				}
				if k.name == "none" || k.name == "wrong" {
					if w.Code != nethttp.StatusUnauthorized {
						t.Errorf("%s %s with %s key: %d, want 401", m, p, k.name, w.Code)
					}
				} else if w.Code == nethttp.StatusUnauthorized {
					t.Errorf("%s %s with %s key: 401", m, p, k.name)
				}
			}
		}
	}
	if w := call("PUT", "/v1/jobs", "Bearer "+readKey); w.Code != nethttp.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, POST" {
		t.Errorf("PUT /v1/jobs with a read key: %d Allow %q", w.Code, w.Header().Get("Allow"))
	}
	if w := call("GET", "/v1/nope", "Bearer "+testKey); w.Code != nethttp.StatusNotFound {
		t.Errorf("GET /v1/nope with a write key: %d", w.Code)
	}
	if logs := e.logs.String(); !strings.Contains(logs, `"key":"viewer"`) || !strings.Contains(logs, `"key":"key-`) {
		t.Errorf("request logs do not name the keys:\n%s", logs)
	}
}

// TestCallerOf: handlers and code below them see who called.
func TestCallerOf(t *testing.T) {
	t.Parallel()
	s := NewServer(Config{APIKeys: []string{"ci:write:k1", "viewer:read:k2"}}, nil, nil, nil, nil)
	for key, want := range map[string]Caller{"k1": {"ci", RoleWrite}, "k2": {"viewer", RoleRead}} {
		w := httptest.NewRecorder()
		c, _ := gin.CreateTestContext(w)
		c.Request = httptest.NewRequest("GET", "/v1/jobs", nil)
		c.Request.Header.Set("Authorization", "Bearer "+key)
		if !s.identify(c) {
			t.Fatalf("key %s refused", key)
		}
		if got := CallerOf(c); got != want {
			t.Errorf("CallerOf = %+v, want %+v", got, want)
		}
		if got, ok := CallerFromContext(c.Request.Context()); !ok || got != want {
			t.Errorf("CallerFromContext = %+v %v, want %+v", got, ok, want)
		}
	}
}
