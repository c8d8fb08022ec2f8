package http

import (
	"context"
	"encoding/json"
	"fmt"
	nethttp "net/http"
	"strings"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
)

// wantListable fails unless GET /v1/jobs and GET /v1/jobs/{id} of every
// job answer 200 with a body that decodes.
func wantListable(t *testing.T, e *env) {
	t.Helper()
	w := e.do("GET", "/v1/jobs?limit=500", nil)
	wantStatus(t, w, nethttp.StatusOK)
	list := decode[jobList](t, w)
	for _, j := range list.Jobs {
		w := e.do("GET", fmt.Sprintf("/v1/jobs/%d", j.ID), nil)
		wantStatus(t, w, nethttp.StatusOK)
		decode[*chronos.Job](t, w)
	}
}

// TestRunAtYearBounds: a run_at whose UTC year is outside 1-9999 cannot be
// written as RFC 3339, so a job holding one could be stored but never
// shown (a 201 with an empty body, then every list page empty). It is a
// 400 naming run_at, at create and at PATCH, and listing keeps working.
func TestRunAtYearBounds(t *testing.T) {
	e := parallelEnv(t)
	shot := e.createJob(map[string]any{"name": "shot", "run_at": "2030-01-01T00:00:00Z", "target_url": "http://127.0.0.1:9/x"})
	for _, at := range []string{
		"9999-12-31T23:59:59-05:00", // year 10000 in UTC
		"9999-12-31T23:00:00-01:00",
		"0000-12-31T23:59:59Z",      // year 0: 1 BC in Postgres
		"0001-01-01T00:00:00+00:01", // year 0 in UTC
	} {
		body := map[string]any{"name": "far", "run_at": at, "target_url": "http://127.0.0.1:9/x"}
		wantFields(t, e.do("POST", "/v1/jobs", body), "run_at")
		wantFields(t, e.do("PATCH", fmt.Sprintf("/v1/jobs/%d", shot.ID), map[string]any{"run_at": at}), "run_at")
		wantListable(t, e)
	}
	// The bounds themselves are fine.
	for _, at := range []string{"9999-12-31T23:59:59Z", "9999-12-31T23:59:59+05:00", "0001-01-01T00:00:00Z"} {
		w := e.do("PATCH", fmt.Sprintf("/v1/jobs/%d", shot.ID), map[string]any{"run_at": at})
		wantStatus(t, w, nethttp.StatusOK)
		decode[*chronos.Job](t, w)
		wantListable(t, e)
	}
}

// TestUnshowableValueIsNot2xx: should a value that cannot be encoded reach
// the database anyway (written before validation refused it, or by hand),
// the answer is a logged 500 with an error body, never a 2xx without one.
func TestUnshowableValueIsNot2xx(t *testing.T) {
	e := parallelEnv(t)
	j := e.createJob(map[string]any{"name": "shot", "run_at": "2030-01-01T00:00:00Z", "target_url": "http://127.0.0.1:9/x"})
	if _, err := e.db.Pool.Exec(context.Background(), "UPDATE jobs SET run_at = '10000-01-01T04:59:59Z' WHERE id = $1", j.ID); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/v1/jobs", fmt.Sprintf("/v1/jobs/%d", j.ID)} {
		w := e.do("GET", p, nil)
		wantStatus(t, w, nethttp.StatusInternalServerError)
		if errorOf(t, w).Code != chronos.EINTERNAL {
			t.Fatalf("GET %s: %s", p, w.Body.String())
		}
	}
	if !strings.Contains(e.logs.String(), "encode") {
		t.Fatalf("the encoding failure is not logged: %s", e.logs.String())
	}
}

// TestJobShownAsAnswered holds the inputs the fuzz targets found: each
// create and PATCH is answered with the job as a later GET shows it, or
// refused with a 400 naming the field.
func TestJobShownAsAnswered(t *testing.T) {
	e := parallelEnv(t)
	nest := func(n int) json.RawMessage {
		return json.RawMessage(strings.Repeat("[", n) + strings.Repeat("]", n))
	}
	shot := func(runAt string) map[string]any {
		return map[string]any{"name": "a", "run_at": runAt, "target_url": "http://127.0.0.1:9/x"}
	}
	cases := []struct {
		name  string
		body  map[string]any
		field string // "" for a 2xx
	}{
		// The answer had nanoseconds, Postgres keeps microseconds.
		{"run_at with nanoseconds", shot("2030-01-01T00:00:00.123456789+14:00"), ""},
		// Go's decoder stops at 10000 levels, serde_json at 128.
		{"payload 100 deep", with(cronJob("a"), "payload", nest(100)), ""},
		{"payload 101 deep", with(cronJob("a"), "payload", nest(101)), "payload"},
		{"payload 10000 deep", with(cronJob("a"), "payload", nest(10000)), "payload"},
		{"run_at year 10000 in UTC", shot("9999-12-31T23:59:59-05:00"), "run_at"},
	}
	target := e.createJob(shot("2031-01-01T00:00:00Z"))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			patch := map[string]any{}
			for k, v := range c.body {
				if k != "name" && k != "target_url" {
					patch[k] = v
				}
			}
			if _, ok := patch["cron_expr"]; ok {
				patch["run_at"] = nil
			} else {
				patch["cron_expr"] = nil
			}
			// Names are unique: each case creates its own.
			c.body["name"] = "shown " + c.name
			for _, r := range []struct {
				method, path string
				body         any
			}{
				{"POST", "/v1/jobs", c.body},
				{"PATCH", fmt.Sprintf("/v1/jobs/%d", target.ID), patch},
			} {
				w := e.do(r.method, r.path, r.body)
				if c.field != "" {
					wantFields(t, w, c.field)
					continue
				}
				if w.Code/100 != 2 {
					t.Fatalf("%s %s: %d %s", r.method, r.path, w.Code, w.Body.String())
				}
				wantShown(t, e, decode[*chronos.Job](t, w), r.method+" "+r.path)
			}
		})
	}
	wantListable(t, e)
}

// TestTimezoneIANAOnly: "Local" (and other names that follow the machine
// rather than the IANA database) would make a schedule depend on each
// instance's TZ: a 400 naming timezone, at create and PATCH.
func TestTimezoneIANAOnly(t *testing.T) {
	e := parallelEnv(t)
	j := e.createJob(cronJob("zoned"))
	for _, tz := range []string{"Local", "localtime", "posix/Europe/Berlin", "right/UTC", "posixrules"} {
		wantFields(t, e.do("POST", "/v1/jobs", with(cronJob("a"), "timezone", tz)), "timezone")
		wantFields(t, e.do("PATCH", fmt.Sprintf("/v1/jobs/%d", j.ID), map[string]any{"timezone": tz}), "timezone")
	}
	for _, tz := range []string{"UTC", "Europe/Berlin", "Etc/GMT-14"} {
		wantStatus(t, e.do("POST", "/v1/jobs", with(cronJob("zone-"+strings.ReplaceAll(tz, "/", "-")), "timezone", tz)), nethttp.StatusCreated)
		wantStatus(t, e.do("PATCH", fmt.Sprintf("/v1/jobs/%d", j.ID), map[string]any{"timezone": tz}), nethttp.StatusOK)
	}
}

// with sets one field of a body.
func with(b map[string]any, k string, v any) map[string]any {
	b[k] = v
	return b
}

// TestPatchEndedCronJob: a year-bounded cron job whose last occurrence has
// passed can still be paused, renamed, re-enabled or moved to another zone
// (next_run_at stays null); only a new cron_expr must fire again, as at
// create.
func TestPatchEndedCronJob(t *testing.T) {
	e := parallelEnv(t)
	wantFields(t, e.do("POST", "/v1/jobs", with(cronJob("ended"), "cron_expr", "0 0 1 1 * 2020")), "cron_expr")
	j := e.createJob(with(cronJob("ended"), "cron_expr", "0 0 1 1 * 2099"))
	// Time passes: 2099 is over (the job's last occurrence has fired).
	if _, err := e.db.Pool.Exec(context.Background(),
		"WITH s AS (UPDATE job_schedules SET next_run_at = NULL WHERE job_id = $1) UPDATE jobs SET cron_expr = '0 0 1 1 * 2020' WHERE id = $1", j.ID); err != nil {
		t.Fatal(err)
	}
	path := fmt.Sprintf("/v1/jobs/%d", j.ID)
	for _, patch := range []map[string]any{
		{"enabled": false},
		{"name": "renamed", "max_retries": 0},
		{"enabled": true},
		{"timezone": "Europe/Berlin"},
		{"cron_expr": "0 0 1 1 * 2020"}, // the stored expression, sent back: no change
	} {
		w := e.do("PATCH", path, patch)
		wantStatus(t, w, nethttp.StatusOK)
		if got := decode[*chronos.Job](t, w); got.NextRunAt != nil {
			t.Fatalf("PATCH %v: next_run_at %s for a schedule that has ended", patch, got.NextRunAt)
		}
	}
	wantFields(t, e.do("PATCH", path, map[string]any{"cron_expr": "0 0 1 1 * 2021"}), "cron_expr")
	w := e.do("PATCH", path, map[string]any{"cron_expr": "0 3 * * *"})
	wantStatus(t, w, nethttp.StatusOK)
	if got := decode[*chronos.Job](t, w); got.NextRunAt == nil || !got.NextRunAt.After(time.Now()) {
		t.Fatalf("new schedule: next_run_at %v", got.NextRunAt)
	}
}
