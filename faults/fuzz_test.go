package faults

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/bus"
	chttp "github.com/chronoshq/chronos/http"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// alwaysUp is a Probe for the in-process router.
type alwaysUp struct{}

func (alwaysUp) ListenerConnected() bool { return true }
func (alwaysUp) IsLeader() bool          { return false }

// FuzzListCursorsAndFilters sends random query strings to GET /v1/jobs and
// GET /v1/jobs/{id}/runs through the real router on a real database: any
// answer but a 5xx is fine, and every answer is a JSON object (an error
// envelope for a 4xx). Its seeds run as a regular test.
func FuzzListCursorsAndFilters(f *testing.F) {
	db := sqltest.New(f)
	srv := chttp.NewServer(chttp.Config{Instance: "fuzz", APIKeys: []string{apiKey}, TargetPolicy: chronos.TargetPolicy{AllowPrivate: true}}, db, bus.New(), alwaysUp{},
		slog.New(slog.DiscardHandler))
	h := srv.Handler()
	// do sends a request; target's path is taken literally (not
	// unescaped), its query raw, so any string the fuzzer finds is sent.
	do := func(method, target, body string) *httptest.ResponseRecorder {
		path, query, _ := strings.Cut(target, "?")
		u := &url.URL{Scheme: "http", Host: "chronos.test", Path: path, RawQuery: query}
		req := httptest.NewRequest(method, "http://chronos.test/", strings.NewReader(body))
		req.URL, req.RequestURI = u, u.RequestURI()
		req.Header.Set("Authorization", "Bearer "+apiKey)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}

	// A few jobs with runs of each kind, so cursors and filters have
	// something to walk.
	var jobID int64
	for i := range 5 {
		w := do(http.MethodPost, "/v1/jobs", fmt.Sprintf(
			`{"name":"fz-%d","cron_expr":"0 0 0 1 1 *","target_url":"http://127.0.0.1:9/x","enabled":%v}`, i, i%2 == 0))
		if w.Code != http.StatusCreated {
			f.Fatalf("seed job: HTTP %d %s", w.Code, w.Body)
		}
		var j struct{ ID int64 }
		if err := json.Unmarshal(w.Body.Bytes(), &j); err != nil {
			f.Fatal(err)
		}
		jobID = j.ID
	}
	for range 3 {
		if w := do(http.MethodPost, fmt.Sprintf("/v1/jobs/%d/trigger", jobID), ""); w.Code != http.StatusAccepted {
			f.Fatalf("seed trigger: HTTP %d %s", w.Code, w.Body)
		}
	}
	cursorOf := func(path string) string {
		var page struct {
			NextCursor *string `json:"next_cursor"`
		}
		w := do(http.MethodGet, path, "")
		if err := json.Unmarshal(w.Body.Bytes(), &page); err != nil || page.NextCursor == nil {
			f.Fatalf("seed cursor from %s: HTTP %d %s", path, w.Code, w.Body)
		}
		return *page.NextCursor
	}
	jobCursor := cursorOf("/v1/jobs?limit=1")
	runCursor := cursorOf(fmt.Sprintf("/v1/jobs/%d/runs?limit=1", jobID))

	// Seeds: queries of /v1/jobs (path 0) and of that job's runs (path
	// 1), then ids (and queries) of the runs of a fuzzed job id (path 2).
	jobQueries := []string{
		"",
		"limit=1",
		"limit=500",
		"limit=501",
		"limit=0",
		"limit=-1",
		"limit=1e3",
		"limit=99999999999999999999999",
		"limit=-99999999999999999999999",
		"limit=",
		"limit=1&limit=2",
		"enabled=true",
		"enabled=false",
		"enabled=TRUE",
		"enabled=1",
		"enabled=",
		"enabled=true&limit=2&cursor=" + jobCursor,
		"cursor=" + jobCursor,
		"cursor=" + jobCursor + "x",
		"cursor=" + strings.ToUpper(jobCursor),
		"cursor=" + jobCursor[:len(jobCursor)/2],
		"cursor=" + runCursor,
		"cursor=",
		"cursor=%00",
		"cursor=%ff%fe",
		"cursor=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		"cursor=eyJpZCI6LTF9",                 // {"id":-1}
		"cursor=eyJpZCI6MWUzMDB9",             // {"id":1e300}
		"cursor=bnVsbA",                       // null
		"cursor=" + strings.Repeat("A", 5000), // long
		"status=dead",
		"unknown=1",
		"%zz",
		"a;b",
		"&&&",
		"=x",
	}
	runQueries := []string{
		"",
		"status=dead",
		"status=pending&limit=1",
		"status=succeeded&cursor=" + runCursor,
		"status=DEAD",
		"status=bogus",
		"status=",
		"status=pending&status=dead",
		"cursor=" + runCursor,
		"cursor=" + jobCursor,
		"cursor=" + runCursor + "%3D%3D",
		"enabled=true",
		"limit=2&cursor=" + runCursor[1:],
	}
	idSeeds := []struct{ id, query string }{
		{"0", ""},
		{"-1", ""},
		{"999999", "status=dead"},
		{"9223372036854775807", ""},
		{"9223372036854775808", ""},
		{"1e3", ""},
		{"abc", "limit=1"},
		{"%00", ""},
		{"1%2F2", ""},
		{"", ""},
	}
	for _, q := range jobQueries {
		f.Add(uint8(0), "", q)
	}
	for _, q := range runQueries {
		f.Add(uint8(1), "", q)
	}
	for _, s := range idSeeds {
		f.Add(uint8(2), s.id, s.query)
	}
	f.Fuzz(func(t *testing.T, path uint8, id, query string) {
		var target string
		switch path % 3 {
		case 0:
			target = "/v1/jobs"
		case 1:
			target = fmt.Sprintf("/v1/jobs/%d/runs", jobID)
		default:
			if strings.ContainsAny(id, "/?") {
				t.Skip("not one path segment")
			}
			target = "/v1/jobs/" + id + "/runs"
		}
		if query != "" {
			target += "?" + query
		}
		w := do(http.MethodGet, target, "")
		body, _ := io.ReadAll(w.Body)
		if w.Code >= 500 {
			t.Fatalf("GET %s: HTTP %d %s", target, w.Code, body)
		}
		var obj map[string]any
		if err := json.Unmarshal(body, &obj); err != nil {
			t.Fatalf("GET %s: HTTP %d, body is not a JSON object: %v: %q", target, w.Code, err, body)
		}
		if w.Code >= 400 {
			if _, ok := obj["error"].(map[string]any); !ok {
				t.Fatalf("GET %s: HTTP %d without an error envelope: %s", target, w.Code, body)
			}
		}
	})
}
