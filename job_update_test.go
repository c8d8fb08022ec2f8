package chronos

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

func decodeUpdate(t *testing.T, body string) *JobUpdate {
	t.Helper()
	var u JobUpdate
	if err := json.Unmarshal([]byte(body), &u); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return &u
}

func storedJob() *Job {
	j := validJob()
	j.ID = 42
	j.Enabled = true
	j.Headers = map[string]string{"X-Env": "prod"}
	j.MaxRetries = 5
	j.Overlap = OverlapSkip
	j.NextRunAt = ptr(time.Date(2026, 12, 3, 2, 0, 0, 0, time.UTC))
	return j
}

// cloneJob copies the fields Apply may change, deeply enough for DeepEqual.
func cloneJob(j *Job) *Job {
	c := *j
	c.Headers = map[string]string{}
	for k, v := range j.Headers {
		c.Headers[k] = v
	}
	c.Payload = append(json.RawMessage(nil), j.Payload...)
	return &c
}

func TestJobUpdateAbsentFieldsUntouched(t *testing.T) {
	t.Parallel()
	j := storedJob()
	j.Enabled = false
	before := cloneJob(j)
	u := decodeUpdate(t, `{"cron_expr": "*/5 * * * *"}`)
	rescheduled, err := u.Apply(j)
	if err != nil {
		t.Fatal(err)
	}
	if !rescheduled {
		t.Fatal("a new cron_expr must reschedule")
	}
	if j.Enabled {
		t.Fatal("enabled changed although absent (ticket 05)")
	}
	if *j.CronExpr != "*/5 * * * *" {
		t.Fatalf("cron_expr = %q", *j.CronExpr)
	}
	j.CronExpr = before.CronExpr
	if !reflect.DeepEqual(j, before) {
		t.Fatalf("absent fields changed:\n got %+v\nwant %+v", j, before)
	}
}

func TestJobUpdateEmptyBodyChangesNothing(t *testing.T) {
	t.Parallel()
	j := storedJob()
	before := cloneJob(j)
	rescheduled, err := decodeUpdate(t, `{}`).Apply(j)
	if err != nil || rescheduled {
		t.Fatalf("empty update: rescheduled=%v err=%v", rescheduled, err)
	}
	if !reflect.DeepEqual(j, before) {
		t.Fatal("empty update changed the job")
	}
}

func TestJobUpdateSetsEveryField(t *testing.T) {
	t.Parallel()
	j := storedJob()
	u := decodeUpdate(t, `{
		"name": "renamed", "timezone": "Asia/Tokyo", "target_url": "https://example.org/x",
		"method": "put", "headers": {"A": "b"}, "payload": [1,2], "timeout_seconds": 7,
		"max_retries": 0, "backoff": "linear", "backoff_base_seconds": 3, "backoff_max_seconds": 30,
		"overlap": "queue_one", "enabled": false}`)
	rescheduled, err := u.Apply(j)
	if err != nil {
		t.Fatal(err)
	}
	if !rescheduled {
		t.Fatal("a new time zone must reschedule")
	}
	if j.Name != "renamed" || j.Timezone != "Asia/Tokyo" || j.TargetURL != "https://example.org/x" || j.Method != "PUT" ||
		!reflect.DeepEqual(j.Headers, map[string]string{"A": "b"}) || string(j.Payload) != "[1,2]" ||
		j.TimeoutSeconds != 7 || j.MaxRetries != 0 || j.Backoff != BackoffLinear || j.BackoffBaseSeconds != 3 ||
		j.BackoffMaxSeconds != 30 || j.Overlap != OverlapQueueOne || j.Enabled {
		t.Fatalf("not every field applied: %+v", j)
	}
	if err := j.Validate(); err != nil {
		t.Fatalf("updated job invalid: %v", err)
	}
}

func TestJobUpdateNulls(t *testing.T) {
	t.Parallel()
	runAt := "2030-01-02T03:04:05+01:00"
	j := storedJob()
	rescheduled, err := decodeUpdate(t, `{"cron_expr": null, "run_at": "`+runAt+`"}`).Apply(j)
	if err != nil || !rescheduled {
		t.Fatalf("switch to one-shot: rescheduled=%v err=%v", rescheduled, err)
	}
	if j.CronExpr != nil || j.RunAt == nil || !j.RunAt.Equal(mustTime(t, runAt)) || j.RunAt.Location() != time.UTC {
		t.Fatalf("cron_expr=%v run_at=%v", j.CronExpr, j.RunAt)
	}
	if err := j.Validate(); err != nil {
		t.Fatalf("one-shot invalid: %v", err)
	}

	j = storedJob()
	if _, err := decodeUpdate(t, `{"timezone": null, "method": null, "headers": null, "payload": null}`).Apply(j); err != nil {
		t.Fatal(err)
	}
	if j.Timezone != "UTC" || j.Method != "POST" || j.Headers == nil || len(j.Headers) != 0 || j.Payload != nil {
		t.Fatalf("nulls did not reset to defaults: %+v", j)
	}

	for _, field := range []string{"name", "target_url", "timeout_seconds", "max_retries", "backoff",
		"backoff_base_seconds", "backoff_max_seconds", "overlap", "enabled"} {
		j := storedJob()
		before := cloneJob(j)
		_, err := decodeUpdate(t, `{"`+field+`": null}`).Apply(j)
		if ErrorCode(err) != EINVALID || err.(*Error).Fields[field] == "" {
			t.Fatalf("null %s: err = %v, want EINVALID naming it", field, err)
		}
		if !reflect.DeepEqual(j, before) {
			t.Fatalf("null %s changed the job", field)
		}
	}
}

func TestJobUpdateBothScheduleFieldsIsInvalidAfterApply(t *testing.T) {
	t.Parallel()
	j := storedJob()
	if _, err := decodeUpdate(t, `{"run_at": "2030-01-01T00:00:00Z"}`).Apply(j); err != nil {
		t.Fatal(err)
	}
	err := j.Validate()
	if ErrorCode(err) != EINVALID || err.(*Error).Fields["cron_expr"] == "" || err.(*Error).Fields["run_at"] == "" {
		t.Fatalf("cron_expr and run_at together: %v (ticket 03)", err)
	}
}

func TestJobUpdateReenableReschedules(t *testing.T) {
	t.Parallel()
	j := storedJob()
	j.Enabled = false
	if r, err := decodeUpdate(t, `{"enabled": true}`).Apply(j); err != nil || !r || !j.Enabled {
		t.Fatalf("re-enable: rescheduled=%v err=%v enabled=%v", r, err, j.Enabled)
	}
	if r, err := decodeUpdate(t, `{"enabled": true}`).Apply(j); err != nil || r {
		t.Fatalf("enable an enabled job: rescheduled=%v err=%v", r, err)
	}
	if r, err := decodeUpdate(t, `{"enabled": false}`).Apply(j); err != nil || r || j.Enabled {
		t.Fatalf("disable: rescheduled=%v err=%v", r, err)
	}
	if r, err := decodeUpdate(t, `{"name": "x", "max_retries": 1}`).Apply(j); err != nil || r {
		t.Fatalf("non-schedule fields: rescheduled=%v err=%v", r, err)
	}
}

func TestJobUpdateWrongTypes(t *testing.T) {
	t.Parallel()
	for _, body := range []string{`{"enabled": "yes"}`, `{"max_retries": "3"}`, `{"headers": ["a"]}`,
		`{"run_at": "tomorrow"}`, `{"timeout_seconds": 1.5}`, `{"name": 7}`} {
		var u JobUpdate
		if err := json.Unmarshal([]byte(body), &u); err == nil {
			t.Errorf("decode %s: want a type error", body)
		}
	}
}

// TestJobUpdateRunAtMicroseconds: run_at keeps what Postgres keeps, so the
// answer to a create or PATCH is the value a later GET shows.
func TestJobUpdateRunAtMicroseconds(t *testing.T) {
	t.Parallel()
	j := storedJob()
	if _, err := decodeUpdate(t, `{"cron_expr": null, "run_at": "2030-01-02T03:04:05.123456789+01:00"}`).Apply(j); err != nil {
		t.Fatal(err)
	}
	if want := mustTime(t, "2030-01-02T02:04:05.123456Z"); !j.RunAt.Equal(want) {
		t.Fatalf("run_at %s, want %s", j.RunAt.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
	}
}
