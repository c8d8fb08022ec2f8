package tests

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	nethttp "net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/bus"
	chttp "github.com/chronoshq/chronos/http"
	"github.com/chronoshq/chronos/http/apitest"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// apiKey is the key every apiServer accepts.
const apiKey = "ticket-api-key-4242"

// apiServer is the real API (gin router, auth, sql layer) on a fresh
// database, served over real HTTP.
type apiServer struct {
	t      testing.TB
	DB     *sql.DB
	Bus    *bus.Bus
	Probe  *apitest.Probe
	Server *chttp.Server
	URL    string
	client *nethttp.Client
}

func newAPIServer(t testing.TB) *apiServer {
	t.Helper()
	a := &apiServer{t: t, DB: sqltest.New(t), Bus: bus.New(), Probe: &apitest.Probe{}}
	a.Probe.Connected.Store(true)
	a.Server = chttp.NewServer(chttp.Config{Instance: "ticket", APIKeys: []string{apiKey}, TargetPolicy: chronos.TargetPolicy{AllowPrivate: true}}, a.DB, a.Bus, a.Probe,
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	ts := httptest.NewServer(a.Server.Handler())
	t.Cleanup(ts.Close)
	a.URL = ts.URL
	a.client = ts.Client()
	a.client.Timeout = 30 * time.Second
	return a
}

// apiResponse is one answer of the API.
type apiResponse struct {
	Status int
	Header nethttp.Header
	Body   []byte
}

// call sends a request with the API key. body is nil, a string, or
// anything else to be marshalled as JSON.
func (a *apiServer) call(method, path string, body any) apiResponse {
	a.t.Helper()
	return a.callAuth(method, path, body, "Bearer "+apiKey)
}

// callAuth sends a request with the given Authorization header ("" for none).
func (a *apiServer) callAuth(method, path string, body any, auth string) apiResponse {
	a.t.Helper()
	r := apitest.Body(a.t, body)
	req, err := nethttp.NewRequestWithContext(context.Background(), method, a.URL+path, r)
	if err != nil {
		a.t.Fatalf("request: %v", err)
	}
	if r != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatalf("%s %s: read: %v", method, path, err)
	}
	return apiResponse{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// want fails unless the response has the status.
func (r apiResponse) want(t testing.TB, status int) apiResponse {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	return r
}

// apiDecode unmarshals a response body.
func apiDecode[T any](t testing.TB, r apiResponse) T {
	t.Helper()
	return apitest.Decode[T](t, r.Body)
}

// apiErr decodes the JSON error envelope, failing when it is not one.
func apiErr(t testing.TB, r apiResponse) *chronos.Error {
	t.Helper()
	return apitest.ErrorOf(t, r.Body)
}

// wantInvalid fails unless r is a 400 envelope naming every field.
func wantInvalid(t testing.TB, r apiResponse, fields ...string) {
	t.Helper()
	r.want(t, nethttp.StatusBadRequest)
	e := apiErr(t, r)
	if e.Code != chronos.EINVALID {
		t.Fatalf("code %q: %s", e.Code, r.Body)
	}
	for _, f := range fields {
		if _, ok := e.Fields[f]; !ok {
			t.Fatalf("400 does not name %q: %s", f, r.Body)
		}
	}
}

// apiJobSeq numbers job names: names are unique.
var apiJobSeq atomic.Int64

// apiJobBody is a valid create body for a cron job, named name-<n>.
func apiJobBody(name string) map[string]any {
	name = fmt.Sprintf("%s-%d", name, apiJobSeq.Add(1))
	return map[string]any{"name": name, "cron_expr": "*/10 * * * *", "target_url": "http://127.0.0.1:9/hook"}
}

// createJob creates a job through the API.
func (a *apiServer) createJob(body map[string]any) *chronos.Job {
	a.t.Helper()
	return apiDecode[*chronos.Job](a.t, a.call("POST", "/v1/jobs", body).want(a.t, nethttp.StatusCreated))
}

// apiJobPage is the body of GET /v1/jobs.
type apiJobPage struct {
	Jobs       []*chronos.Job `json:"jobs"`
	NextCursor *string        `json:"next_cursor"`
}

// apiRunPage is the body of GET /v1/jobs/{id}/runs.
type apiRunPage struct {
	Runs       []*chronos.Run `json:"runs"`
	NextCursor *string        `json:"next_cursor"`
}

func apiItoa(i int64) string { return strconv.FormatInt(i, 10) }
