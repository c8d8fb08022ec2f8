package http

import (
	"errors"
	"fmt"
	nethttp "net/http"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/chronoshq/chronos"
)

func TestErrorMapping(t *testing.T) {
	e := parallelEnvNoDB(t)
	cases := []struct {
		err    error
		status int
		code   string
	}{
		{chronos.InvalidFields(map[string]string{"name": "bad"}), 400, chronos.EINVALID},
		{fmt.Errorf("wrapped: %w", chronos.Errorf(chronos.ENOTFOUND, "no job")), 404, chronos.ENOTFOUND},
		{chronos.Errorf(chronos.ECONFLICT, "not dead"), 409, chronos.ECONFLICT},
		{chronos.Errorf(chronos.EUNAUTHORIZED, "who"), 401, chronos.EUNAUTHORIZED},
		{chronos.Errorf(chronos.ETOOLARGE, "big"), 413, chronos.ETOOLARGE},
		{chronos.Errorf(chronos.EINTERNAL, "secret detail"), 500, chronos.EINTERNAL},
		{chronos.Errorf("weird", "secret detail"), 500, chronos.EINTERNAL},
		{errors.New("secret detail"), 500, chronos.EINTERNAL},
	}
	for i, c := range cases {
		path := fmt.Sprintf("/test/err/%d", i)
		e.srv.engine.GET(path, func(g *gin.Context) { e.srv.fail(g, c.err) })
		req := newRequest("GET", path, nil)
		req.Header.Set("X-Request-Id", fmt.Sprintf("req-%d", i))
		w := e.serve(req)
		wantStatus(t, w, c.status)
		got := errorOf(t, w)
		if got.Code != c.code {
			t.Errorf("%v: code %q, want %q", c.err, got.Code, c.code)
		}
		if c.status == 500 {
			if got.Message != "internal error" || strings.Contains(w.Body.String(), "secret") {
				t.Errorf("500 leaks detail: %s", w.Body.String())
			}
			if logs := e.logs.String(); !strings.Contains(logs, fmt.Sprintf(`"request_id":"req-%d"`, i)) || !strings.Contains(logs, "secret detail") {
				t.Errorf("500 not logged with request id: %s", logs)
			}
		}
		if w.Header().Get("X-Request-Id") != fmt.Sprintf("req-%d", i) {
			t.Errorf("request id not echoed: %q", w.Header().Get("X-Request-Id"))
		}
	}
	if got := errorOf(t, e.do("GET", "/test/err/0", nil)); got.Fields["name"] != "bad" {
		t.Errorf("fields lost: %+v", got)
	}
}

func TestRequestIDGenerated(t *testing.T) {
	e := parallelEnvNoDB(t)
	w := e.do("GET", "/healthz", nil)
	if id := w.Header().Get("X-Request-Id"); len(id) < 16 {
		t.Fatalf("no generated request id: %q", id)
	}
	req := newRequest("GET", "/healthz", nil)
	req.Header.Set("X-Request-Id", "bad id\twith spaces")
	if id := e.serve(req).Header().Get("X-Request-Id"); strings.Contains(id, " ") {
		t.Fatalf("insane request id echoed: %q", id)
	}
}

func TestRecovery(t *testing.T) {
	e := parallelEnvNoDB(t)
	e.srv.engine.GET("/test/panic", func(*gin.Context) { panic("boom in handler") })
	req := newRequest("GET", "/test/panic", nil)
	req.Header.Set("X-Request-Id", "panic-req")
	w := e.serve(req)
	wantStatus(t, w, nethttp.StatusInternalServerError)
	if got := errorOf(t, w); got.Code != chronos.EINTERNAL || got.Message != "internal error" {
		t.Fatalf("envelope %+v", got)
	}
	logs := e.logs.String()
	if !strings.Contains(logs, "boom in handler") || !strings.Contains(logs, `"request_id":"panic-req"`) {
		t.Fatalf("panic not logged with request id: %s", logs)
	}
}

func TestNotFoundAndMethod(t *testing.T) {
	e := parallelEnvNoDB(t)
	w := e.do("GET", "/v2/nothing", nil)
	wantStatus(t, w, nethttp.StatusNotFound)
	errorOf(t, w)
	w = e.do("PUT", "/v1/jobs", nil)
	wantStatus(t, w, nethttp.StatusMethodNotAllowed)
	errorOf(t, w)
	if allow := w.Header().Get("Allow"); allow != "GET, POST" {
		t.Fatalf("Allow %q", allow)
	}
}

func TestAuth(t *testing.T) {
	e := parallelEnv(t)
	for _, key := range []string{"", "wrong", testKey + "x", "other-ke"} {
		w := e.doKey("GET", "/v1/jobs", nil, key)
		wantStatus(t, w, nethttp.StatusUnauthorized)
		if errorOf(t, w).Code != chronos.EUNAUTHORIZED || !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("key %q: %s %v", key, w.Body.String(), w.Header())
		}
	}
	req := newRequest("GET", "/v1/jobs", nil)
	req.Header.Set("Authorization", "Basic dXNlcjpwYXNz")
	wantStatus(t, e.serve(req), nethttp.StatusUnauthorized)
	for _, key := range []string{testKey, "other-key"} {
		wantStatus(t, e.doKey("GET", "/v1/jobs", nil, key), nethttp.StatusOK)
	}
	req = newRequest("GET", "/v1/jobs", nil)
	req.Header.Set("Authorization", "bearer "+testKey)
	wantStatus(t, e.serve(req), nethttp.StatusOK)

	open := newEnvDB(t, e.db, func(c *Config) { c.APIKeys = nil; c.AuthDisabled = true })
	wantStatus(t, open.doKey("GET", "/v1/jobs", nil, ""), nethttp.StatusOK)
	if !strings.Contains(open.logs.String(), "DISABLED") {
		t.Fatalf("no warning when auth is disabled: %s", open.logs.String())
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cfg Config
		ok  bool
	}{
		{Config{}, false},
		{Config{APIKeys: []string{"k"}}, true},
		{Config{APIKeys: []string{"k", " "}}, false},
		{Config{AuthDisabled: true}, true},
		{Config{APIKeys: []string{"k"}, MaxBodyBytes: -1}, false},
	} {
		if err := c.cfg.Validate(); (err == nil) != c.ok {
			t.Errorf("%+v: Validate() = %v", c.cfg, err)
		}
	}
}

func TestKeyMatchesChecksEveryKey(t *testing.T) {
	t.Parallel()
	s := &Server{}
	for _, k := range []string{"a", "b", "c"} {
		key, err := ParseAPIKey(k)
		if err != nil {
			t.Fatal(err)
		}
		s.keys = append(s.keys, key)
	}
	for k, want := range map[string]int{"a": 0, "b": 1, "c": 2, "d": -1, "": -1, "ab": -1} {
		if got := s.matchKey(k); got != want {
			t.Errorf("matchKey(%q) = %v, want %v", k, got, want)
		}
	}
}
