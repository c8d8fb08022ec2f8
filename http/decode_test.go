package http

import (
	nethttp "net/http"
	"strings"
	"testing"

	"github.com/chronoshq/chronos"
)

func TestDecodeObject(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body string
		field      string // "" means success
	}{
		{"ok", `{"name": "a", "max_retries": 2}`, ""},
		{"empty object", `{}`, ""},
		{"unknown field", `{"name": "a", "nmae": "b"}`, "nmae"},
		{"case folded key is unknown", `{"Name": "a"}`, "Name"},
		{"duplicate key", `{"name": "a", "name": "b"}`, "name"},
		{"wrong type string", `{"max_retries": "3"}`, "max_retries"},
		{"wrong type bool", `{"enabled": "yes"}`, "enabled"},
		{"fraction for int", `{"timeout_seconds": 1.5}`, "timeout_seconds"},
		{"int overflow", `{"max_retries": 99999999999999999999999}`, "max_retries"},
		{"float overflow", `{"backoff_base_seconds": 1e999}`, "backoff_base_seconds"},
		{"bad time", `{"run_at": "tomorrow"}`, "run_at"},
		{"time as number", `{"run_at": 12}`, "run_at"},
		{"headers not object", `{"headers": ["a"]}`, "headers"},
		{"header value not string", `{"headers": {"X-A": 1}}`, "headers"},
		{"trailing data", `{"name": "a"} {"name": "b"}`, "body"},
		{"trailing garbage", `{"name": "a"}x`, "body"},
		{"array", `[{"name": "a"}]`, "body"},
		{"null", `null`, "body"},
		{"string", `"name"`, "body"},
		{"truncated", `{"name": "a"`, "body"},
		{"syntax", `{"name" "a"}`, "body"},
		{"not json", `name=a`, "body"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var u chronos.JobUpdate
			_, err := decodeObject([]byte(c.body), &u)
			if c.field == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if chronos.ErrorCode(err) != chronos.EINVALID {
				t.Fatalf("error %v, want invalid", err)
			}
			if _, ok := err.(*chronos.Error).Fields[c.field]; !ok {
				t.Fatalf("error %v does not name %q", err, c.field)
			}
		})
	}
}

func TestDecodeObjectSetsOpt(t *testing.T) {
	t.Parallel()
	var u chronos.JobUpdate
	n, err := decodeObject([]byte(`{"cron_expr": null, "max_retries": 0, "enabled": false}`), &u)
	if err != nil || n != 3 {
		t.Fatalf("n %d err %v", n, err)
	}
	if !u.CronExpr.Set || !u.CronExpr.Null || !u.MaxRetries.Set || u.MaxRetries.Value != 0 || !u.Enabled.Set || u.Enabled.Value || u.Name.Set {
		t.Fatalf("decoded %+v", u)
	}
}

func TestBodyLimit(t *testing.T) {
	e := parallelEnv(t, func(c *Config) { c.MaxBodyBytes = 1024 })
	big := `{"name": "` + strings.Repeat("a", 2000) + `"}`
	// Declared Content-Length over the limit.
	w := e.do("POST", "/v1/jobs", big)
	wantStatus(t, w, nethttp.StatusRequestEntityTooLarge)
	if errorOf(t, w).Code != chronos.ETOOLARGE {
		t.Fatalf("code %s", w.Body.String())
	}
	// Streamed without a length: the reader stops at the limit.
	req := newRequest("PATCH", "/v1/jobs/1", strings.NewReader(big))
	req.ContentLength = -1
	w = e.serve(req)
	wantStatus(t, w, nethttp.StatusRequestEntityTooLarge)
	if errorOf(t, w).Code != chronos.ETOOLARGE {
		t.Fatalf("code %s", w.Body.String())
	}
}

func TestCreateValidation(t *testing.T) {
	e := parallelEnv(t)
	cases := []struct {
		name   string
		body   any
		fields []string
	}{
		{"empty body", "", []string{"body"}},
		{"unknown field", `{"name":"a","cron_expr":"* * * * *","target_url":"http://x.test","bogus":1}`, []string{"bogus"}},
		{"both", map[string]any{"name": "a", "cron_expr": "* * * * *", "run_at": "2030-01-01T00:00:00Z", "target_url": "http://x.test"}, []string{"cron_expr", "run_at"}},
		{"neither", map[string]any{"name": "a", "target_url": "http://x.test"}, []string{"cron_expr", "run_at"}},
		{"bad cron", map[string]any{"name": "a", "cron_expr": "61 * * * *", "target_url": "http://x.test"}, []string{"cron_expr"}},
		{"bad zone", map[string]any{"name": "a", "cron_expr": "* * * * *", "timezone": "Mars/Olympus", "target_url": "http://x.test"}, []string{"timezone"}},
		{"ftp target", map[string]any{"name": "a", "cron_expr": "* * * * *", "target_url": "ftp://x.test/f"}, []string{"target_url"}},
		{"metadata target", map[string]any{"name": "a", "cron_expr": "* * * * *", "target_url": "http://169.254.169.254/"}, []string{"target_url"}},
		{"negative retries", map[string]any{"name": "a", "cron_expr": "* * * * *", "target_url": "http://x.test", "max_retries": -1}, []string{"max_retries"}},
		{"huge retries", map[string]any{"name": "a", "cron_expr": "* * * * *", "target_url": "http://x.test", "max_retries": 1000000}, []string{"max_retries"}},
		{"zero timeout", map[string]any{"name": "a", "cron_expr": "* * * * *", "target_url": "http://x.test", "timeout_seconds": 0}, []string{"timeout_seconds"}},
		{"huge timeout", map[string]any{"name": "a", "cron_expr": "* * * * *", "target_url": "http://x.test", "timeout_seconds": 86400}, []string{"timeout_seconds"}},
		{"null name", map[string]any{"name": nil, "cron_expr": "* * * * *", "target_url": "http://x.test"}, []string{"name"}},
		{"bad backoff", map[string]any{"name": "a", "cron_expr": "* * * * *", "target_url": "http://x.test", "backoff": "fibonacci"}, []string{"backoff"}},
		{"bad overlap", map[string]any{"name": "a", "cron_expr": "* * * * *", "target_url": "http://x.test", "overlap": "maybe"}, []string{"overlap"}},
		{"wrong type", `{"name":"a","cron_expr":"* * * * *","target_url":"http://x.test","max_retries":"3"}`, []string{"max_retries"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantFields(t, e.do("POST", "/v1/jobs", c.body), c.fields...)
		})
	}
	wantFields(t, e.do("POST", "/v1/jobs?x=1", cronJob("a")), "x")
}

func TestPathID(t *testing.T) {
	e := parallelEnv(t)
	for _, p := range []string{"/v1/jobs/abc", "/v1/jobs/1.5", "/v1/jobs/0", "/v1/jobs/-3", "/v1/jobs/99999999999999999999", "/v1/runs/x", "/v1/jobs/x/runs", "/v1/runs/x/redrive"} {
		method := "GET"
		if strings.HasSuffix(p, "redrive") {
			method = "POST"
		}
		wantFields(t, e.do(method, p, nil), "id")
	}
	wantStatus(t, e.do("GET", "/v1/jobs/123456", nil), nethttp.StatusNotFound)
	wantStatus(t, e.do("GET", "/v1/runs/123456", nil), nethttp.StatusNotFound)
	wantStatus(t, e.do("DELETE", "/v1/jobs/123456", nil), nethttp.StatusNotFound)
	wantStatus(t, e.do("PATCH", "/v1/jobs/123456", map[string]any{"name": "x"}), nethttp.StatusNotFound)
	wantStatus(t, e.do("POST", "/v1/jobs/123456/trigger", nil), nethttp.StatusNotFound)
	wantStatus(t, e.do("GET", "/v1/jobs/123456/runs", nil), nethttp.StatusNotFound)
	wantStatus(t, e.do("POST", "/v1/runs/123456/redrive", nil), nethttp.StatusNotFound)
}

func TestQueryValidation(t *testing.T) {
	e := parallelEnv(t)
	j := e.createJob(cronJob("q"))
	runs := "/v1/jobs/" + itoa64(j.ID) + "/runs"
	for path, field := range map[string]string{
		"/v1/jobs?enabled=yes":     "enabled",
		"/v1/jobs?enabled=1":       "enabled",
		"/v1/jobs?limit=0":         "limit",
		"/v1/jobs?limit=-1":        "limit",
		"/v1/jobs?limit=ten":       "limit",
		"/v1/jobs?limit=1&limit=2": "limit",
		"/v1/jobs?cursor=garbage":  "cursor",
		"/v1/jobs?enabld=true":     "enabld",
		runs + "?status=exploded":  "status",
		runs + "?cursor=%21%21":    "cursor",
		runs + "?limit=1.5":        "limit",
		"/v1/events?job_id=abc":    "job_id",
		"/v1/events?type=nonsense": "type",
		"/v1/events?type=run.,":    "type",
		"/v1/jobs?a=%zz":           "query",
	} {
		w := e.do("GET", path, nil)
		wantFields(t, w, field)
	}
	// Whatever the cursor, never a 5xx.
	for _, c := range []string{"", "AAAA", "eyJpZCI6LTF9", "eyJpZCI6IngifQ", "%00", strings.Repeat("A", 5000), "MTIz", "-1", "9999999999999999999999", "%FF%FE"} {
		for _, p := range []string{"/v1/jobs?cursor=", runs + "?cursor="} {
			if w := e.do("GET", p+c, nil); w.Code >= 500 {
				t.Fatalf("cursor %q: %d %s", c, w.Code, w.Body.String())
			}
		}
	}
	// A huge limit is capped, not refused.
	wantStatus(t, e.do("GET", "/v1/jobs?limit=100000", nil), nethttp.StatusOK)
	wantStatus(t, e.do("GET", "/v1/jobs?limit=99999999999999999999999", nil), nethttp.StatusOK)
}
