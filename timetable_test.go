package chronos

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func mustSchedule(t testing.TB, s ScheduleSpec) *Schedule {
	t.Helper()
	sc, err := NewSchedule(s)
	if err != nil {
		t.Fatalf("NewSchedule(%+v): %v", s, err)
	}
	return sc
}

func formatTimes(ts []time.Time) string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.UTC().Format(time.RFC3339)
	}
	return strings.Join(out, " ")
}

func wantTimes(t *testing.T, got []time.Time, want ...string) {
	t.Helper()
	if g, w := formatTimes(got), strings.Join(want, " "); g != w {
		t.Fatalf("got  %s\nwant %s", g, w)
	}
}

func TestJobPreviewBerlin(t *testing.T) {
	t.Parallel()
	j := validJob() // 0 3 * * * in Europe/Berlin
	p, err := j.Preview(mustTime(t, "2026-12-03T12:00:00Z"), 3)
	if err != nil {
		t.Fatal(err)
	}
	wantTimes(t, p.FireTimes, "2026-12-04T02:00:00Z", "2026-12-05T02:00:00Z", "2026-12-06T02:00:00Z")
	if p.LocalTimes[0] != "2026-12-04T03:00:00+01:00" {
		t.Fatalf("local time %s", p.LocalTimes[0])
	}
	if p.Description != "At 03:00 every day (Europe/Berlin)" {
		t.Fatalf("description %q", p.Description)
	}
	// A paused job previews what it would do once resumed.
	j.Enabled = false
	q, _ := j.Preview(mustTime(t, "2026-12-03T12:00:00Z"), 3)
	wantTimes(t, q.FireTimes, formatTimes(p.FireTimes))
}

func TestJobPreviewOneShot(t *testing.T) {
	t.Parallel()
	at := mustTime(t, "2026-12-04T02:00:00Z")
	j := &Job{RunAt: &at, Timezone: "Europe/Berlin"}
	p, _ := j.Preview(at.Add(-time.Hour), 10)
	wantTimes(t, p.FireTimes, "2026-12-04T02:00:00Z")
	if p, _ = j.Preview(at, 10); len(p.FireTimes) != 0 {
		t.Fatalf("a past run_at previews %v", p.FireTimes)
	}
}

func TestScheduleStartsAndEnds(t *testing.T) {
	t.Parallel()
	starts, ends := mustTime(t, "2026-06-03T00:00:00Z"), mustTime(t, "2026-06-05T00:00:00Z")
	s := mustSchedule(t, ScheduleSpec{CronExpr: "0 0 * * *", StartsAt: &starts, EndsAt: &ends})
	// Both bounds are inclusive; nothing before or after.
	wantTimes(t, s.Preview(mustTime(t, "2026-06-01T00:00:00Z"), 10),
		"2026-06-03T00:00:00Z", "2026-06-04T00:00:00Z", "2026-06-05T00:00:00Z")
	if _, ok := s.Next(ends); ok {
		t.Fatal("an occurrence after ends_at")
	}
	// An odd starts_at: the first occurrence at or after it.
	odd := mustTime(t, "2026-06-03T00:00:00.5Z")
	s = mustSchedule(t, ScheduleSpec{CronExpr: "* * * * * *", StartsAt: &odd})
	wantTimes(t, s.Preview(time.Time{}, 1), "2026-06-03T00:00:01Z")
}

func TestScheduleExclusions(t *testing.T) {
	t.Parallel()
	s := mustSchedule(t, ScheduleSpec{CronExpr: "0 3 * * *", Timezone: "Europe/Berlin",
		Exclude: []DateRange{{From: "2026-12-24", To: "2026-12-26"}, {From: "2026-12-31", To: "2026-12-31"}}})
	wantTimes(t, s.Preview(mustTime(t, "2026-12-22T12:00:00Z"), 5),
		"2026-12-23T02:00:00Z", "2026-12-27T02:00:00Z", "2026-12-28T02:00:00Z", "2026-12-29T02:00:00Z",
		"2026-12-30T02:00:00Z")
	next, excluded, ok := s.Step(mustTime(t, "2026-12-23T02:00:00Z"))
	if !ok || excluded != 3 || !next.Equal(mustTime(t, "2026-12-27T02:00:00Z")) {
		t.Fatalf("Step = %s, %d excluded, %v; want 12-27, 3", next, excluded, ok)
	}
	next, excluded, _ = s.Step(mustTime(t, "2026-12-30T02:00:00Z"))
	if excluded != 1 || !next.Equal(mustTime(t, "2027-01-01T02:00:00Z")) {
		t.Fatalf("Step = %s, %d excluded", next, excluded)
	}
	// Ranges are dates in the job's zone: 23:30 UTC on the 23rd is the
	// 24th in Berlin, excluded.
	s = mustSchedule(t, ScheduleSpec{CronExpr: "30 23 * * *", Timezone: "UTC", Exclude: []DateRange{{From: "2026-12-24", To: "2026-12-24"}}})
	wantTimes(t, s.Preview(mustTime(t, "2026-12-23T00:00:00Z"), 2), "2026-12-23T23:30:00Z", "2026-12-25T23:30:00Z")
	s = mustSchedule(t, ScheduleSpec{CronExpr: "30 23 * * *", Timezone: "Europe/Berlin", Exclude: []DateRange{{From: "2026-12-24", To: "2026-12-24"}}})
	wantTimes(t, s.Preview(mustTime(t, "2026-12-23T00:00:00Z"), 2), "2026-12-23T22:30:00Z", "2026-12-25T22:30:00Z")
	// Counting a dense schedule inside a long range is bounded.
	s = mustSchedule(t, ScheduleSpec{CronExpr: "* * * * * *", Exclude: []DateRange{{From: "2026-01-01", To: "2026-12-31"}}})
	if _, n, _ := s.Step(mustTime(t, "2025-12-31T23:59:59Z")); n != MaxExcludedCountedRange {
		t.Fatalf("counted %d", n)
	}
}

func TestScheduleEveryIsAnchored(t *testing.T) {
	t.Parallel()
	created := mustTime(t, "2026-06-01T10:00:07.25Z")
	s := mustSchedule(t, ScheduleSpec{CronExpr: "@every 90s", Anchor: created})
	wantTimes(t, s.Preview(created, 3), "2026-06-01T10:01:37Z", "2026-06-01T10:03:07Z", "2026-06-01T10:04:37Z")
	// From any later instant (a new leader after a failover) the grid is
	// the same: no drift.
	wantTimes(t, s.Preview(mustTime(t, "2026-06-01T12:00:00Z"), 1), "2026-06-01T12:00:07Z")
	// starts_at anchors instead, and fires itself.
	starts := mustTime(t, "2026-07-01T00:00:00Z")
	s = mustSchedule(t, ScheduleSpec{CronExpr: "@every 1h30m", Anchor: created, StartsAt: &starts, Timezone: "America/New_York"})
	wantTimes(t, s.Preview(created, 2), "2026-07-01T00:00:00Z", "2026-07-01T01:30:00Z")
	for _, bad := range []string{"@every", "@every 0s", "@every 1.5s", "@every 9000h", "@every x", "@every 1m 2m", "@every -5s"} {
		if err := ValidateCron(bad); err == nil {
			t.Errorf("ValidateCron(%q) accepted", bad)
		}
	}
}

func TestDialectExtensions(t *testing.T) {
	t.Parallel()
	runOccurrenceCases(t, []occurrenceCase{
		{"@midnight", "@midnight", "Europe/Berlin", "2026-06-01T12:00:00Z", "2026-06-01T22:00:00Z"},
		{"LW: last weekday, the month ends on a Sunday", "0 9 LW * *", "UTC", "2026-05-01T00:00:00Z", "2026-05-29T09:00:00Z"},
		{"LW: the month ends on a Tuesday", "0 9 LW * *", "UTC", "2026-06-01T00:00:00Z", "2026-06-30T09:00:00Z"},
		{"LW: the month ends on a Saturday", "0 9 LW * *", "UTC", "2026-10-01T00:00:00Z", "2026-10-30T09:00:00Z"},
		{"L-2 in June", "0 9 L-2 * *", "UTC", "2026-06-01T00:00:00Z", "2026-06-28T09:00:00Z"},
		{"L-2 in February", "0 9 L-2 * *", "UTC", "2026-02-01T00:00:00Z", "2026-02-26T09:00:00Z"},
		{"L-1 in a leap February", "0 9 L-1 2 *", "UTC", "2027-06-01T00:00:00Z", "2028-02-28T09:00:00Z"},
		{"L-30 only in 31-day months", "0 9 L-30 * *", "UTC", "2026-02-01T00:00:00Z", "2026-03-01T09:00:00Z"},
		{"LW with a list", "0 9 1,LW * *", "UTC", "2026-05-02T00:00:00Z", "2026-05-29T09:00:00Z"},
	})
	for _, bad := range []string{"0 0 L-31 * *", "0 0 L-0x * *", "0 0 LW5 * *", "@midnights"} {
		if err := ValidateCron(bad); err == nil {
			t.Errorf("ValidateCron(%q) accepted", bad)
		}
	}
	err := ValidateCron("@weird")
	if err == nil || !strings.Contains(err.Error(), "@every") {
		t.Fatalf("an unsupported macro must say what is supported: %v", err)
	}
}

// The repeated hour (issue 14): wildcard and step hours fire in both
// passes, fixed hours once; in both zones the README names.
func TestScheduleRepeatedHour(t *testing.T) {
	t.Parallel()
	ny := mustSchedule(t, ScheduleSpec{CronExpr: "0 * * * *", Timezone: "America/New_York"})
	wantTimes(t, ny.Preview(mustTime(t, "2026-11-01T03:30:00Z"), 4), // 23:30 EDT
		"2026-11-01T04:00:00Z", "2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z")
	fixed := mustSchedule(t, ScheduleSpec{CronExpr: "30 1 * * *", Timezone: "America/New_York"})
	wantTimes(t, fixed.Preview(mustTime(t, "2026-10-31T12:00:00Z"), 2), "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z")
	berlin := mustSchedule(t, ScheduleSpec{CronExpr: "*/30 * * * *", Timezone: "Europe/Berlin"})
	// 02:00 and 02:30 CEST, then 02:00 and 02:30 CET, then 03:00 CET.
	wantTimes(t, berlin.Preview(mustTime(t, "2026-10-24T23:45:00Z"), 5),
		"2026-10-25T00:00:00Z", "2026-10-25T00:30:00Z", "2026-10-25T01:00:00Z", "2026-10-25T01:30:00Z", "2026-10-25T02:00:00Z")
	fixedBerlin := mustSchedule(t, ScheduleSpec{CronExpr: "0 2 * * *", Timezone: "Europe/Berlin"})
	wantTimes(t, fixedBerlin.Preview(mustTime(t, "2026-10-24T12:00:00Z"), 2), "2026-10-25T00:00:00Z", "2026-10-26T01:00:00Z")
}

func TestJitterIsDeterministicAndBounded(t *testing.T) {
	t.Parallel()
	at := mustTime(t, "2026-06-01T10:00:00Z")
	if Jitter(1, at, 0) != 0 {
		t.Fatal("no jitter without jitter_seconds")
	}
	seen := map[time.Duration]bool{}
	for id := int64(1); id <= 200; id++ {
		d := Jitter(id, at, 60)
		if d < 0 || d >= time.Minute || d%time.Millisecond != 0 {
			t.Fatalf("jitter %v out of [0, 60s)", d)
		}
		if Jitter(id, at, 60) != d {
			t.Fatal("jitter is not deterministic")
		}
		seen[d.Truncate(10*time.Second)] = true
	}
	if len(seen) < 6 {
		t.Fatalf("jitter of 200 jobs falls in %d of 6 ten-second buckets", len(seen))
	}
	if Jitter(7, at, 60) == Jitter(7, at.Add(time.Hour), 60) && Jitter(7, at, 60) == Jitter(7, at.Add(2*time.Hour), 60) {
		t.Fatal("jitter does not depend on the instant")
	}
	j := &Job{ID: 7, JitterSeconds: 60}
	if got := j.FireAt(at); got.Sub(at) != Jitter(7, at, 60) {
		t.Fatalf("FireAt %v", got)
	}
}

func TestValidatePolicies(t *testing.T) {
	t.Parallel()
	past, future := mustTime(t, "2026-01-01T00:00:00Z"), mustTime(t, "2030-01-01T00:00:00Z")
	cases := []struct {
		name  string
		mod   func(j *Job)
		field string
	}{
		{"starts_at on a one-shot", func(j *Job) { j.CronExpr, j.RunAt, j.StartsAt = nil, &future, &past }, "starts_at"},
		{"ends_at before starts_at", func(j *Job) { j.StartsAt, j.EndsAt = &future, &past }, "ends_at"},
		{"ends_at equal to starts_at", func(j *Job) { j.StartsAt, j.EndsAt = &future, &future }, "ends_at"},
		{"misfire", func(j *Job) { j.Misfire = "some" }, "misfire"},
		{"deadline zero", func(j *Job) { j.StartingDeadlineSeconds = ptr(0) }, "starting_deadline_seconds"},
		{"deadline too long", func(j *Job) { j.StartingDeadlineSeconds = ptr(MaxStartingDeadline + 1) }, "starting_deadline_seconds"},
		{"jitter negative", func(j *Job) { j.JitterSeconds = -1 }, "jitter_seconds"},
		{"jitter over an hour", func(j *Job) { j.JitterSeconds = 3601 }, "jitter_seconds"},
		{"jitter not below the gap", func(j *Job) { j.CronExpr, j.JitterSeconds = ptr("* * * * *"), 60 }, "jitter_seconds"},
		{"jitter not below an @every", func(j *Job) { j.CronExpr, j.JitterSeconds = ptr("@every 30s"), 30 }, "jitter_seconds"},
		{"exclude bad date", func(j *Job) { j.Exclude = []DateRange{{From: "2026-12-24", To: "2026-13-01"}} }, "exclude"},
		{"exclude backwards", func(j *Job) { j.Exclude = []DateRange{{From: "2026-12-26", To: "2026-12-24"}} }, "exclude"},
		{"exclude on a one-shot", func(j *Job) {
			j.CronExpr, j.RunAt, j.Exclude = nil, &future, []DateRange{{From: "2026-12-24", To: "2026-12-24"}}
		}, "exclude"},
		{"too many exclusions", func(j *Job) { j.Exclude = make([]DateRange, MaxExclusions+1) }, "exclude"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := validateChanged(tc.mod)
			var e *Error
			if !errors.As(err, &e) || e.Fields[tc.field] == "" {
				t.Fatalf("Validate = %v, want a complaint about %s", err, tc.field)
			}
		})
	}
	j := validJob()
	j.StartsAt, j.EndsAt, j.Misfire, j.StartingDeadlineSeconds = &past, &future, MisfireAll, ptr(60)
	j.JitterSeconds, j.Exclude = 3600, []DateRange{{From: "2026-12-24", To: "2026-12-26"}}
	j.CronExpr = ptr("@every 2h")
	if err := j.Validate(); err != nil {
		t.Fatalf("valid policies refused: %v", err)
	}
	j.CronExpr = ptr("* * * * *")
	j.JitterSeconds = 59
	if err := j.Validate(); err != nil {
		t.Fatalf("jitter just below the gap refused: %v", err)
	}
}

func TestJobNextRunNamesTheBound(t *testing.T) {
	t.Parallel()
	j := validJob()
	ends := mustTime(t, "2026-01-01T00:00:00Z")
	j.EndsAt = &ends
	now := mustTime(t, "2026-06-01T00:00:00Z")
	// A job past its ends_at is finished: no next run, no error.
	if next, err := j.NextRun(now); next != nil || err != nil {
		t.Fatalf("NextRun past ends_at = %v, %v", next, err)
	}
	// A new schedule that leaves nothing before ends_at is refused, naming it.
	var e *Error
	if err := j.ValidateSchedule(now); !errors.As(err, &e) || e.Fields["ends_at"] == "" {
		t.Fatalf("ValidateSchedule past ends_at = %v", err)
	}
	j.EndsAt = nil
	if err := j.ValidateSchedule(now); err != nil {
		t.Fatal(err)
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"0 3 * * *":          "At 03:00 every day (UTC)",
		"@midnight":          "At 00:00 every day (UTC)",
		"*/15 * * * *":       "Every 15 minutes every day (UTC)",
		"* * * * *":          "Every minute every day (UTC)",
		"*/10 * * * * *":     "Every 10 seconds every day (UTC)",
		"5 * * * *":          "At minute 5 past every hour every day (UTC)",
		"0 */2 * * *":        "At minute 0 past every 2 hours every day (UTC)",
		"30 9 * * 1-5":       "At 09:30 on Monday through Friday (UTC)",
		"0 9,17 * * MON,WED": "At 09:00, 17:00 on Monday, Wednesday (UTC)",
		"0 0 L * *":          "At 00:00 on the last day of the month (UTC)",
		"0 0 LW * *":         "At 00:00 on the last weekday of the month (UTC)",
		"0 0 L-3 * *":        "At 00:00 on 3 days before the last day of the month (UTC)",
		"0 0 15W * *":        "At 00:00 on the weekday nearest day 15 of the month (UTC)",
		"0 0 * * 5L":         "At 00:00 on the last Friday of the month (UTC)",
		"0 0 * * 1#2":        "At 00:00 on the second Monday of the month (UTC)",
		"0 0 1 1 *":          "At 00:00 on day 1 of the month in January (UTC)",
		"0 12 1 */3 *":       "At 12:00 on day 1 of the month in */3 (UTC)",
	}
	for expr, want := range cases {
		s := mustSchedule(t, ScheduleSpec{CronExpr: expr})
		if got := s.Describe(); got != want {
			t.Errorf("Describe(%q) = %q, want %q", expr, got, want)
		}
	}
	anchor := mustTime(t, "2026-06-01T00:00:00Z")
	s := mustSchedule(t, ScheduleSpec{CronExpr: "@every 90s", Anchor: anchor, Exclude: []DateRange{{From: "2026-12-24", To: "2026-12-24"}}})
	if got := s.Describe(); got != "Every 1m30s, counted from 2026-06-01T00:00:00Z, except 1 excluded date range" {
		t.Errorf("Describe(@every) = %q", got)
	}
}

// BenchmarkPreview100 is the preview endpoints' work: 100 fire times of a
// zoned schedule with exclusions (issue 14 asks for under 5 ms).
func BenchmarkPreview100(b *testing.B) {
	for _, expr := range []string{"0 3 * * *", "*/5 * * * *", "0 9 LW * *", "@every 90s", "0 * * * *"} {
		b.Run(strings.ReplaceAll(expr, " ", "_"), func(b *testing.B) {
			s := mustSchedule(b, ScheduleSpec{CronExpr: expr, Timezone: "America/New_York",
				Exclude: []DateRange{{From: "2026-12-24", To: "2026-12-26"}, {From: "2027-01-01", To: "2027-01-01"}}})
			after := time.Date(2026, 10, 31, 0, 0, 0, 0, time.UTC)
			b.ReportAllocs()
			for b.Loop() {
				if len(s.Preview(after, 100)) != 100 {
					b.Fatal("short preview")
				}
			}
		})
	}
}

// For an expression whose hour field repeats, the occurrences over a
// fall-back night are exactly the real instants whose local wall clock
// matches it, in both passes; in zones that fall back by an hour or by 30
// minutes, at 02:00, 03:00 or 03:45.
func TestRepeatedHourMatchesEveryRealInstant(t *testing.T) {
	t.Parallel()
	nights := map[string]string{
		"America/New_York":    "2026-11-01T00:00:00Z",
		"Europe/Berlin":       "2026-10-24T18:00:00Z",
		"Australia/Lord_Howe": "2026-04-04T10:00:00Z",
		"Pacific/Chatham":     "2026-04-04T10:00:00Z",
	}
	for zone, from := range nights {
		loc := mustLoc(t, zone)
		start := mustTime(t, from)
		end := start.Add(12 * time.Hour)
		if _, off1 := start.In(loc).Zone(); func() bool { _, off2 := end.In(loc).Zone(); return off2 >= off1 }() {
			t.Fatalf("test bug: no fall back in %s between %s and %s", zone, start, end)
		}
		for _, expr := range []string{"*/15 * * * *", "0 * * * *", "5,35 */2 * * *", "* * * * *", "30 * * * *"} {
			c, err := parseCron(expr)
			if err != nil || !c.repeatHour {
				t.Fatalf("%q: %v, repeat %v", expr, err, c.repeatHour)
			}
			var want []time.Time
			for at := start.Add(time.Minute); !at.After(end); at = at.Add(time.Minute) {
				if c.matchWall(at.In(loc)) {
					want = append(want, at)
				}
			}
			var got []time.Time
			for at := start; ; {
				next, err := NextOccurrence(expr, loc, at)
				if err != nil || next.After(end) {
					break
				}
				got = append(got, next)
				at = next
			}
			if g, w := formatTimes(got), formatTimes(want); g != w {
				t.Errorf("%q in %s:\ngot  %s\nwant %s", expr, zone, g, w)
			}
		}
	}
}
