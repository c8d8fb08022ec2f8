package tests

import (
	nethttp "net/http"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/chronoshq/chronos"
)

// TestTicket17APIKeys: every /v1 endpoint (enumerated from the router)
// rejects a missing or wrong key with 401, WWW-Authenticate and the JSON
// error envelope; health endpoints stay open; the right key works.
func TestTicket17APIKeys(t *testing.T) {
	a := parallelAPI(t)
	engine, ok := a.Server.Handler().(*gin.Engine)
	if !ok {
		t.Fatalf("Handler() is %T, not the gin engine", a.Server.Handler())
	}
	job := a.createJob(apiJobBody("auth"))
	id := apiItoa(job.ID)

	wrong := []string{
		"",                                  // no header
		"Bearer",                            // no key
		"Bearer ",                           // empty key
		"Bearer wrong-key",                  // wrong key
		"Bearer " + apiKey[:len(apiKey)-1],  // a prefix of the key
		"Bearer " + apiKey + "x",            // the key plus more
		"Bearer " + strings.ToUpper(apiKey), // case matters in keys
		"Basic " + apiKey,                   // wrong scheme
		apiKey,                              // no scheme
	}
	v1 := 0
	for _, r := range engine.Routes() {
		path := strings.ReplaceAll(r.Path, ":id", id)
		if !strings.HasPrefix(r.Path, "/v1/") {
			// Health, metrics and the document stay open.
			res := a.callAuth(r.Method, path, nil, "")
			if res.Status != nethttp.StatusOK {
				t.Errorf("open endpoint %s %s without a key: %d %s", r.Method, r.Path, res.Status, res.Body)
			}
			continue
		}
		v1++
		for _, auth := range wrong {
			res := a.callAuth(r.Method, path, nil, auth)
			if res.Status != nethttp.StatusUnauthorized {
				t.Fatalf("%s %s with Authorization %q: %d %s", r.Method, r.Path, auth, res.Status, res.Body)
			}
			if e := apiErr(t, res); e.Code != chronos.EUNAUTHORIZED {
				t.Fatalf("%s %s: error code %q", r.Method, r.Path, e.Code)
			}
			if !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("%s %s: WWW-Authenticate %q", r.Method, r.Path, res.Header.Get("WWW-Authenticate"))
			}
		}
	}
	if v1 < 10 {
		t.Fatalf("only %d /v1 routes found", v1)
	}

	// The right key passes every read, and the writes do what they say.
	for _, path := range []string{"/v1/jobs", "/v1/jobs/" + id, "/v1/jobs/" + id + "/runs"} {
		a.call("GET", path, nil).want(t, nethttp.StatusOK)
	}
	run := apiDecode[*chronos.Run](t, a.call("POST", "/v1/jobs/"+id+"/trigger", nil).want(t, nethttp.StatusAccepted))
	a.call("GET", "/v1/runs/"+apiItoa(run.ID), nil).want(t, nethttp.StatusOK)
	a.call("POST", "/v1/runs/"+apiItoa(run.ID)+"/redrive", nil).want(t, nethttp.StatusConflict) // pending, not dead
	a.call("PATCH", "/v1/jobs/"+id, map[string]any{"name": "renamed"}).want(t, nethttp.StatusOK)
	a.call("DELETE", "/v1/jobs/"+id, nil).want(t, nethttp.StatusNoContent)
	a.call("POST", "/v1/jobs", apiJobBody("again")).want(t, nethttp.StatusCreated)
}
