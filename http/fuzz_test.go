package http

import (
	"encoding/json"
	"fmt"
	nethttp "net/http"
	"strings"
	"testing"

	"github.com/chronoshq/chronos"
)

// fuzzSeeds are bodies for both create and update: valid ones, each kind of
// mistake, and shapes that once looked dangerous.
var fuzzSeeds = []string{
	`{"name":"a","cron_expr":"* * * * *","target_url":"http://127.0.0.1:9/x"}`,
	`{"name":"a","run_at":"2030-01-01T00:00:00Z","target_url":"https://example.com/x","timezone":"Europe/Berlin"}`,
	`{"name":"a","cron_expr":"0 3 * * *","timezone":"America/New_York","target_url":"http://h.test","method":"put","headers":{"X-A":"b"},"payload":{"k":[1,2,{"z":null}]},"timeout_seconds":3600,"max_retries":100,"backoff":"linear","backoff_base_seconds":0.5,"backoff_max_seconds":604800,"overlap":"queue_one","enabled":false}`,
	`{"name":"a","cron_expr":"@daily","target_url":"http://h.test"}`,
	`{"name":"a","cron_expr":"30 0 3 * * *","target_url":"http://h.test"}`,
	`{"name":"a","cron_expr":"0 0 L * *","target_url":"http://h.test"}`,
	`{"name":"a","cron_expr":"0 0 * * 1#2","target_url":"http://h.test"}`,
	`{"name":"a","cron_expr":"0 0 30 2 *","target_url":"http://h.test"}`,
	`{"name":"a","cron_expr":"0 0 1 1 * 2020","target_url":"http://h.test"}`,
	`{"name":"a","cron_expr":"* * * * *","run_at":"2030-01-01T00:00:00Z","target_url":"http://h.test"}`,
	`{"name":"a","target_url":"http://h.test"}`,
	`{"cron_expr":null}`,
	`{"run_at":null,"cron_expr":"5 4 * * *"}`,
	`{"enabled":false}`,
	`{"timezone":null}`,
	`{"timezone":"../../etc/passwd"}`,
	`{"timezone":"Local"}`,
	`{"method":null,"headers":null,"payload":null}`,
	`{"name":"\u0000"}`,
	`{"name":"a\u0000b","cron_expr":"* * * * *","target_url":"http://h.test"}`,
	`{"payload":"\u0000"}`,
	`{"payload":{"\u0000":1}}`,
	`{"headers":{"X-A":"\u0000"}}`,
	`{"headers":{"X-A":"a\u0001b"}}`,
	`{"headers":{"":"x"}}`,
	`{"headers":{"X-Chronos-Run-Id":"1"}}`,
	`{"target_url":"http://[::1"}`,
	`{"target_url":"javascript:alert(1)"}`,
	`{"target_url":"http://169.254.169.254/latest"}`,
	`{"target_url":"http://user:pw@h.test"}`,
	`{"cron_expr":"\u0000"}`,
	`{"cron_expr":"* * * * * * * *"}`,
	`{"cron_expr":"*/0 * * * *"}`,
	`{"cron_expr":"0 0 31 2 *"}`,
	`{"cron_expr":"` + strings.Repeat("1,", 200) + `1 * * * *"}`,
	`{"run_at":"0000-01-01T00:00:00Z"}`,
	`{"run_at":"9999-12-31T23:59:59Z"}`,
	`{"run_at":"9999-12-31T23:59:59-05:00"}`,
	`{"name":"a","run_at":"9999-12-31T23:59:59-05:00","target_url":"http://h.test"}`,
	`{"name":"a","run_at":"0001-01-01T00:00:00+00:01","target_url":"http://h.test"}`,
	`{"run_at":"2030-01-01T00:00:00+14:00"}`,
	`{"run_at":"2030-02-30T00:00:00Z"}`,
	`{"max_retries":-1}`,
	`{"max_retries":1e3}`,
	`{"max_retries":9223372036854775807}`,
	`{"timeout_seconds":-2147483649}`,
	`{"backoff_base_seconds":1e308,"backoff_max_seconds":1e308}`,
	`{"backoff_base_seconds":5e-324}`,
	`{"backoff_base_seconds":-0}`,
	`{"overlap":""}`,
	`{"name":"` + strings.Repeat("é", 150) + `"}`,
	`{"name":"\ud800"}`,
	`{"name":1}`,
	`{"Name":"a"}`,
	`{"name":"a","name":"b"}`,
	`{"name":"a"}{}`,
	`{"name":"a"} `,
	`[]`,
	`null`,
	`true`,
	`"x"`,
	`{`,
	`}`,
	``,
	`   `,
	"\xff\xfe",
	`{"payload":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`,
}

// fuzzBody posts or patches body and fails on any 5xx, on an error that
// is not the JSON envelope, and on a 2xx whose job cannot be shown: its
// body must be the job as JSON, and the job must come back, as it was
// answered, from GET /v1/jobs/{id} and from GET /v1/jobs. It returns the
// job of a 2xx (nil otherwise).
func fuzzBody(t *testing.T, e *env, method, path string, body []byte) *chronos.Job {
	t.Helper()
	w := e.do(method, path, body)
	if w.Code >= 500 {
		t.Fatalf("%s %s %q: %d %s", method, path, short(body), w.Code, w.Body.String())
	}
	if w.Code >= 400 {
		errorOf(t, w)
		return nil
	}
	var j chronos.Job
	if err := json.Unmarshal(w.Body.Bytes(), &j); err != nil || j.ID == 0 {
		t.Fatalf("%s %s %q: %d with body %q: not a job (%v)", method, path, short(body), w.Code, short(w.Body.Bytes()), err)
	}
	wantShown(t, e, &j, fmt.Sprintf("%s %s %q", method, path, short(body)))
	return &j
}

// wantShown fails unless GET /v1/jobs/{id} and the job list show j as it
// was answered.
func wantShown(t *testing.T, e *env, j *chronos.Job, what string) {
	t.Helper()
	want := jobJSON(t, j)
	w := e.do("GET", fmt.Sprintf("/v1/jobs/%d", j.ID), nil)
	if w.Code != nethttp.StatusOK {
		t.Fatalf("after %s: GET job: %d %q", what, w.Code, short(w.Body.Bytes()))
	}
	if got := jobJSON(t, decode[*chronos.Job](t, w)); got != want {
		t.Fatalf("after %s: GET job shows another job than the answer: %s", what, firstDiff(got, want))
	}
	w = e.do("GET", "/v1/jobs?limit=500", nil)
	if w.Code != nethttp.StatusOK {
		t.Fatalf("after %s: GET jobs: %d %q", what, w.Code, short(w.Body.Bytes()))
	}
	var list jobList
	if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil {
		t.Fatalf("after %s: GET jobs: body %q: %v", what, short(w.Body.Bytes()), err)
	}
	for _, l := range list.Jobs {
		if l.ID == j.ID {
			if got := jobJSON(t, l); got != want {
				t.Fatalf("after %s: GET jobs shows another job than the answer: %s", what, firstDiff(got, want))
			}
			return
		}
	}
	t.Fatalf("after %s: job %d is not listed: %q", what, j.ID, short(w.Body.Bytes()))
}

// firstDiff shows where two texts part.
func firstDiff(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(0, i-80)
	return fmt.Sprintf("at byte %d: %q versus %q", i, short([]byte(got[from:])), short([]byte(want[from:])))
}

// short keeps a failure message readable.
func short(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + fmt.Sprintf("... (%d bytes)", len(b))
	}
	return string(b)
}

// jobJSON is j's wire form, to compare two answers about one job.
func jobJSON(t *testing.T, j *chronos.Job) string {
	t.Helper()
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatalf("marshal job %d: %v", j.ID, err)
	}
	return string(b)
}

// FuzzCreateJob sends random bodies to POST /v1/jobs through the router
// and a real database: every answer is a 2xx or a 4xx envelope, never a
// 5xx, and a created job can be shown, alone and in the list, as it was
// answered. Each created job is deleted again, so the list stays one page.
// The seeds run as a regular test.
func FuzzCreateJob(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	e := newEnv(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		e.t = t
		if j := fuzzBody(t, e, "POST", "/v1/jobs", body); j != nil {
			wantStatus(t, e.do("DELETE", fmt.Sprintf("/v1/jobs/%d", j.ID), nil), nethttp.StatusNoContent)
		}
	})
}

// FuzzUpdateJob does the same for PATCH /v1/jobs/{id}, on a cron job and
// a one-shot (whose state the inputs keep changing).
func FuzzUpdateJob(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	e := newEnv(f)
	cron := e.createJob(cronJob("fuzz-cron"))
	shot := e.createJob(map[string]any{"name": "fuzz-shot", "run_at": "2030-01-01T00:00:00Z", "target_url": "http://127.0.0.1:9/x"})
	paths := []string{fmt.Sprintf("/v1/jobs/%d", cron.ID), fmt.Sprintf("/v1/jobs/%d", shot.ID)}
	f.Fuzz(func(t *testing.T, body []byte) {
		e.t = t
		for _, p := range paths {
			fuzzBody(t, e, "PATCH", p, body)
		}
	})
}

// FuzzJobFields fuzzes the values of a well-formed job rather than the
// bytes of a body, which reaches the values that could be stored but not
// shown much sooner: each input is created, then patched onto a cron job
// and a one-shot, and every 2xx must show, as answered, alone and in the
// list. The seeds run as a regular test.
func FuzzJobFields(f *testing.F) {
	type seed struct {
		name, schedule string
		oneShot        bool
		timezone       string
		target, method string
		hkey, hval     string
		payload        string
		timeout        int
		retries        int
		base, cap      float64
		overlap        string
	}
	for _, s := range []seed{
		{"a", "*/5 * * * *", false, "UTC", "http://127.0.0.1:9/x", "POST", "X-A", "b", `{"k":[1,2,{"z":null}]}`, 30, 3, 2, 600, "allow"},
		{"é\u2028", "2030-01-01T00:00:00.123456789+14:00", true, "Europe/Berlin", "https://h.test/p?q=1#f", "put", "Authorization", "Bearer x", `"\u0000"`, 1, 0, 0.5, 0.5, "queue_one"},
		{"far", "9999-12-31T23:59:59-05:00", true, "UTC", "http://h.test", "GET", "X", "", `null`, 3600, 100, 5e-324, 604800, "skip"},
		{"far", "0001-01-01T00:00:00+00:01", true, "UTC", "http://h.test", "GET", "X", "", `1e999`, 3600, 100, 1, 1, "skip"},
		{"tz", "0 3 * * *", false, "Local", "http://h.test", "DELETE", "X", "\u00ff", `[]`, 5, 5, 1, 2, "allow"},
		{"deep", "@daily", false, "America/New_York", "http://[::1]:9/x", "HEAD", "X", "v", strings.Repeat("[", 101) + strings.Repeat("]", 101), 5, 5, 1, 2, "allow"},
		{"year", "0 0 1 1 * 2020", false, "UTC", "http://h.test", "POST", "X", "v", `{}`, 5, 5, 1, 2, "allow"},
		{"year", "59 59 23 31 12 * 9999", false, "Pacific/Kiritimati", "http://h.test", "POST", "X", "v", `{}`, 5, 5, 1, 2, "allow"},
	} {
		f.Add(s.name, s.schedule, s.oneShot, s.timezone, s.target, s.method, s.hkey, s.hval, []byte(s.payload),
			s.timeout, s.retries, s.base, s.cap, s.overlap)
	}
	e := newEnv(f)
	cron := e.createJob(cronJob("fuzz-cron"))
	shot := e.createJob(map[string]any{"name": "fuzz-shot", "run_at": "2030-01-01T00:00:00Z", "target_url": "http://127.0.0.1:9/x"})
	f.Fuzz(func(t *testing.T, name, schedule string, oneShot bool, timezone, target, method, hkey, hval string,
		payload []byte, timeout, retries int, base, cap float64, overlap string) {
		e.t = t
		body := map[string]any{
			"name": name, "timezone": timezone, "target_url": target, "method": method,
			"headers": map[string]string{hkey: hval}, "timeout_seconds": timeout, "max_retries": retries,
			"backoff_base_seconds": base, "backoff_max_seconds": cap, "overlap": overlap,
			"cron_expr": schedule, "run_at": nil,
		}
		if oneShot {
			body["cron_expr"], body["run_at"] = nil, schedule
		}
		if json.Valid(payload) {
			body["payload"] = json.RawMessage(payload)
		} else {
			body["payload"] = string(payload)
		}
		b, err := json.Marshal(body)
		if err != nil {
			t.Skip("not expressible as JSON:", err) // NaN, ±Inf
		}
		if j := fuzzBody(t, e, "POST", "/v1/jobs", b); j != nil {
			wantStatus(t, e.do("DELETE", fmt.Sprintf("/v1/jobs/%d", j.ID), nil), nethttp.StatusNoContent)
		}
		for _, id := range []int64{cron.ID, shot.ID} {
			fuzzBody(t, e, "PATCH", fmt.Sprintf("/v1/jobs/%d", id), b)
		}
	})
}
