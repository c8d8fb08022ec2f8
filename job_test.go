package chronos

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func ptr[T any](v T) *T { return &v }

func validJob() *Job {
	j := &Job{
		Name:      "nightly-report",
		CronExpr:  ptr("0 3 * * *"),
		Timezone:  "Europe/Berlin",
		TargetURL: "https://example.com/hooks/report",
		Payload:   json.RawMessage(`{"report":"daily"}`),
	}
	j.ApplyDefaults()
	return j
}

// validateChanged is what Validate says of validJob changed by change.
func validateChanged(change func(*Job)) error {
	j := validJob()
	change(j)
	return j.Validate()
}

func TestApplyDefaults(t *testing.T) {
	t.Parallel()
	j := &Job{Method: "put"}
	j.ApplyDefaults()
	if j.Timezone != "UTC" || j.Method != "PUT" || j.Headers == nil || j.TimeoutSeconds != DefaultTimeoutSeconds ||
		j.Backoff != BackoffExponential || j.BackoffBaseSeconds != DefaultBackoffBaseSeconds ||
		j.BackoffMaxSeconds != DefaultBackoffMaxSeconds || j.Overlap != OverlapAllow || j.Enabled {
		t.Fatalf("defaults not applied as documented: %+v", j)
	}
	j = &Job{}
	j.ApplyDefaults()
	if j.Method != "POST" {
		t.Fatalf("default method %q", j.Method)
	}
	// A base above the default cap raises the default cap.
	j = &Job{BackoffBaseSeconds: 1000}
	j.ApplyDefaults()
	if j.BackoffMaxSeconds != 1000 {
		t.Fatalf("cap %v below base", j.BackoffMaxSeconds)
	}
}

func TestJobValidateAcceptsValid(t *testing.T) {
	t.Parallel()
	if err := validJob().Validate(); err != nil {
		t.Fatalf("valid job rejected: %v", err)
	}
	j := validJob()
	j.CronExpr = nil
	j.RunAt = ptr(time.Now().Add(time.Hour))
	if err := j.Validate(); err != nil {
		t.Fatalf("valid one-shot rejected: %v", err)
	}
	for _, at := range []time.Time{time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)} {
		j.RunAt = &at
		if err := j.Validate(); err != nil {
			t.Fatalf("one-shot at %s rejected: %v", at, err)
		}
	}
	j = validJob()
	j.Headers = map[string]string{"X-Env": "prod", "Authorization": "Bearer x", "X-Tab": "a\tb", "X-Utf8": "é"}
	j.Method = "DELETE"
	j.Overlap = OverlapQueueOne
	j.Backoff = BackoffLinear
	j.Payload = nil
	if err := j.Validate(); err != nil {
		t.Fatalf("valid job rejected: %v", err)
	}
}

func TestJobValidateRejects(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mutate func(j *Job)
		fields []string
	}{
		{"missing name", func(j *Job) { j.Name = " " }, []string{"name"}},
		{"long name", func(j *Job) { j.Name = strings.Repeat("n", MaxNameLength+1) }, []string{"name"}},
		{"both cron and run_at", func(j *Job) { j.RunAt = ptr(time.Now()) }, []string{"cron_expr", "run_at"}},
		{"neither cron nor run_at", func(j *Job) { j.CronExpr = nil }, []string{"cron_expr", "run_at"}},
		{"bad cron", func(j *Job) { j.CronExpr = ptr("61 * * * *") }, []string{"cron_expr"}},
		{"run_at past year 9999 in UTC", func(j *Job) {
			j.CronExpr, j.RunAt = nil, ptr(time.Date(9999, 12, 31, 23, 59, 59, 0, time.FixedZone("EST", -5*3600)))
		}, []string{"run_at"}},
		{"run_at in year 0 in UTC", func(j *Job) {
			j.CronExpr, j.RunAt = nil, ptr(time.Date(1, 1, 1, 0, 30, 0, 0, time.FixedZone("+01", 3600)))
		}, []string{"run_at"}},
		{"bad time zone", func(j *Job) { j.Timezone = "Mars/Olympus_Mons" }, []string{"timezone"}},
		{"path-like time zone", func(j *Job) { j.Timezone = "../../etc/passwd" }, []string{"timezone"}},
		{"the machine's time zone", func(j *Job) { j.Timezone = "Local" }, []string{"timezone"}},
		{"missing url", func(j *Job) { j.TargetURL = "" }, []string{"target_url"}},
		{"ftp url", func(j *Job) { j.TargetURL = "ftp://example.com/x" }, []string{"target_url"}},
		{"relative url", func(j *Job) { j.TargetURL = "/hooks" }, []string{"target_url"}},
		{"credentials in url", func(j *Job) { j.TargetURL = "https://u:p@example.com/" }, []string{"target_url"}},
		{"metadata url", func(j *Job) { j.TargetURL = "http://169.254.169.254/latest/meta-data" }, []string{"target_url"}},
		{"metadata url v4-in-v6", func(j *Job) { j.TargetURL = "http://[::ffff:169.254.169.254]/" }, []string{"target_url"}},
		{"long url", func(j *Job) { j.TargetURL = "https://example.com/" + strings.Repeat("a", MaxURLLength) }, []string{"target_url"}},
		{"bad method", func(j *Job) { j.Method = "TRACE" }, []string{"method"}},
		{"reserved header", func(j *Job) { j.Headers = map[string]string{"X-Chronos-Run-Id": "1"} }, []string{"headers"}},
		{"host header", func(j *Job) { j.Headers = map[string]string{"Host": "evil"} }, []string{"headers"}},
		{"bad header name", func(j *Job) { j.Headers = map[string]string{"Bad Name": "x"} }, []string{"headers"}},
		{"header injection", func(j *Job) { j.Headers = map[string]string{"X-A": "a\r\nX-B: b"} }, []string{"headers"}},
		// net/http refuses to send these: every attempt would fail.
		{"control character in header", func(j *Job) { j.Headers = map[string]string{"X-A": "a\x01b"} }, []string{"headers"}},
		{"DEL in header", func(j *Job) { j.Headers = map[string]string{"X-A": "a\x7fb"} }, []string{"headers"}},
		{"invalid payload", func(j *Job) { j.Payload = json.RawMessage(`{"a":`) }, []string{"payload"}},
		{"huge payload", func(j *Job) {
			j.Payload = json.RawMessage(`"` + strings.Repeat("a", MaxPayloadBytes) + `"`)
		}, []string{"payload"}},
		{"deep payload", func(j *Job) {
			j.Payload = json.RawMessage(strings.Repeat(`[`, MaxPayloadDepth+1) + strings.Repeat(`]`, MaxPayloadDepth+1))
		}, []string{"payload"}},
		{"deep payload in objects", func(j *Job) {
			j.Payload = json.RawMessage(strings.Repeat(`{"a":`, MaxPayloadDepth+1) + "1" + strings.Repeat(`}`, MaxPayloadDepth+1))
		}, []string{"payload"}},
		{"zero timeout", func(j *Job) { j.TimeoutSeconds = 0 }, []string{"timeout_seconds"}},
		{"long timeout", func(j *Job) { j.TimeoutSeconds = MaxTimeoutSeconds + 1 }, []string{"timeout_seconds"}},
		{"negative retries", func(j *Job) { j.MaxRetries = -1 }, []string{"max_retries"}},
		{"too many retries", func(j *Job) { j.MaxRetries = MaxMaxRetries + 1 }, []string{"max_retries"}},
		{"bad backoff", func(j *Job) { j.Backoff = "fibonacci" }, []string{"backoff"}},
		{"zero base", func(j *Job) { j.BackoffBaseSeconds = 0 }, []string{"backoff_base_seconds"}},
		{"cap below base", func(j *Job) { j.BackoffBaseSeconds = 10; j.BackoffMaxSeconds = 5 }, []string{"backoff_max_seconds"}},
		{"huge cap", func(j *Job) { j.BackoffMaxSeconds = MaxBackoffSeconds + 1 }, []string{"backoff_max_seconds"}},
		{"bad overlap", func(j *Job) { j.Overlap = "sometimes" }, []string{"overlap"}},
		{"several at once", func(j *Job) { j.Name = ""; j.Method = "BREW" }, []string{"name", "method"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := validateChanged(tc.mutate)
			if err == nil {
				t.Fatal("Validate accepted an invalid job")
			}
			if code := ErrorCode(err); code != EINVALID {
				t.Fatalf("code %q, want %q", code, EINVALID)
			}
			e := err.(*Error)
			for _, f := range tc.fields {
				if e.Fields[f] == "" {
					t.Fatalf("error %v does not name field %q", err, f)
				}
			}
			if len(e.Fields) != len(tc.fields) {
				t.Fatalf("error names %v, want exactly %v", e.Fields, tc.fields)
			}
		})
	}
}

func TestLoadTimezone(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", "UTC", "America/New_York", "Europe/Berlin", "Etc/UTC", "Etc/GMT+5",
		"America/Argentina/Buenos_Aires", "America/Port-au-Prince", "EST5EDT", "GMT"} {
		if _, err := LoadTimezone(name); err != nil {
			t.Errorf("LoadTimezone(%q): %v", name, err)
		}
	}
	for _, name := range []string{"Nowhere/City", "/etc/localtime", "../UTC", strings.Repeat("A", 65), "UTC\x00",
		// Not IANA names: they follow the machine (Local, localtime) or
		// are other files of the zoneinfo directory.
		"Local", "local", "localtime", "posixrules", "posix/Europe/Berlin", "right/UTC", "zone.tab", "tzdata.zi",
		"Europe//Berlin", "Europe/", "utc", " UTC"} {
		if _, err := LoadTimezone(name); err == nil {
			t.Errorf("LoadTimezone(%q) accepted", name)
		}
	}
	if _, err := LoadTimezone("Local"); err == nil || !strings.Contains(err.Error(), "IANA") {
		t.Errorf("LoadTimezone(Local) = %v, want an error that asks for an IANA name", err)
	}
}

func TestJobLocation(t *testing.T) {
	t.Parallel()
	if (&Job{}).Location() != time.UTC || (&Job{Timezone: "Bogus/Zone"}).Location() != time.UTC ||
		(&Job{Timezone: "Local"}).Location() != time.UTC {
		t.Fatal("unset or unknown zone is not UTC")
	}
	if got := (&Job{Timezone: "Asia/Tokyo"}).Location().String(); got != "Asia/Tokyo" {
		t.Fatalf("Location = %s", got)
	}
}

func TestJobJSONWireForm(t *testing.T) {
	t.Parallel()
	j := validJob()
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "name", "cron_expr", "run_at", "timezone", "target_url", "method", "headers",
		"payload", "timeout_seconds", "max_retries", "backoff", "backoff_base_seconds", "backoff_max_seconds",
		"overlap", "enabled", "next_run_at", "created_at", "updated_at"} {
		if _, ok := m[k]; !ok {
			t.Errorf("wire form lacks %q", k)
		}
	}
	if m["run_at"] != nil || m["next_run_at"] != nil {
		t.Errorf("unset times must be null: %v %v", m["run_at"], m["next_run_at"])
	}
}

func TestJSONDepth(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{
		`1`: 0, `"[[["`: 0, `[]`: 1, `{"a":[1,{"b":[]}]}`: 4, `["]\"[", [[]]]`: 3, `[{}, {}, [[]]]`: 3,
		strings.Repeat(`[`, MaxPayloadDepth) + strings.Repeat(`]`, MaxPayloadDepth): MaxPayloadDepth,
	} {
		if got := jsonDepth([]byte(in)); got != want {
			t.Errorf("jsonDepth(%s) = %d, want %d", in, got, want)
		}
	}
	j := validJob()
	j.Payload = json.RawMessage(strings.Repeat(`[`, MaxPayloadDepth) + strings.Repeat(`]`, MaxPayloadDepth))
	if err := j.Validate(); err != nil {
		t.Fatalf("payload %d levels deep rejected: %v", MaxPayloadDepth, err)
	}
}

// TestJobValidateSchedule: Validate checks a cron expression's syntax only,
// so a job whose year-bounded schedule has ended stays valid (and
// updatable); ValidateSchedule, asked at create and when cron_expr
// changes, is what refuses a schedule that never fires again.
func TestJobValidateSchedule(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		expr, zone string
		fires      bool
	}{
		{"0 3 * * *", "Europe/Berlin", true},
		{"0 0 1 1 * 2027", "UTC", true},
		{"0 0 1 1 * 2026", "UTC", false}, // ended this January
		{"0 0 1 1 * 2020", "UTC", false},
		{"0 0 30 2 *", "UTC", false},
		{"59 59 23 31 12 * 9999", "Pacific/Kiritimati", true}, // 09:59:59 UTC
		{"59 59 23 31 12 * 9999", "Pacific/Pago_Pago", false}, // year 10000 in UTC
	} {
		j := validJob()
		j.CronExpr, j.Timezone = ptr(tc.expr), tc.zone
		if err := j.Validate(); err != nil {
			t.Errorf("%q in %s: Validate: %v", tc.expr, tc.zone, err)
		}
		err := j.ValidateSchedule(now)
		if tc.fires {
			if err != nil {
				t.Errorf("%q in %s: ValidateSchedule: %v", tc.expr, tc.zone, err)
			}
			continue
		}
		if ErrorCode(err) != EINVALID || err.(*Error).Fields["cron_expr"] == "" {
			t.Errorf("%q in %s: ValidateSchedule = %v, want EINVALID naming cron_expr", tc.expr, tc.zone, err)
		}
		if next, err := j.NextRun(now); next != nil || err != nil {
			t.Errorf("%q in %s: NextRun = %v, %v, want none", tc.expr, tc.zone, next, err)
		}
	}
	j := validJob()
	j.CronExpr, j.RunAt = nil, ptr(now.Add(-time.Hour))
	if err := j.ValidateSchedule(now); err != nil {
		t.Errorf("one-shot in the past: %v", err)
	}
}

func TestCronExprChanged(t *testing.T) {
	t.Parallel()
	a, a2, b := ptr("0 0 1 1 * 2020"), ptr("0 0 1 1 * 2020"), ptr("0 3 * * *")
	for _, tc := range []struct {
		before, after *string
		want          bool
	}{
		{a, a2, false}, {a, b, true}, {nil, a, true}, {a, nil, false}, {nil, nil, false},
	} {
		if got := CronExprChanged(tc.before, tc.after); got != tc.want {
			t.Errorf("CronExprChanged(%v, %v) = %v", tc.before, tc.after, got)
		}
	}
}
