package http

import (
	"fmt"
	"strings"
	"testing"
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

// fuzzBody posts or patches body and fails on any 5xx or a response that
// is not JSON.
func fuzzBody(t *testing.T, e *env, method, path string, body []byte) {
	w := e.do(method, path, body)
	if w.Code >= 500 {
		t.Fatalf("%s %s %q: %d %s", method, path, body, w.Code, w.Body.String())
	}
	if w.Code >= 400 {
		errorOf(t, w)
	}
}

// FuzzCreateJob sends random bodies to POST /v1/jobs through the router
// and a real database: every answer is a 2xx or a 4xx envelope, never a
// 5xx. The seeds run as a regular test.
func FuzzCreateJob(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	e := newEnv(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		e.t = t
		fuzzBody(t, e, "POST", "/v1/jobs", body)
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
