package chronos

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func mustLoc(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return loc
}

func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("parse %s: %v", s, err)
	}
	return v
}

type occurrenceCase struct {
	name, expr, zone, after, want string
}

func runOccurrenceCases(t *testing.T, cases []occurrenceCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			loc := mustLoc(t, tc.zone)
			after := mustTime(t, tc.after)
			got, err := NextOccurrence(tc.expr, loc, after)
			if err != nil {
				t.Fatalf("NextOccurrence(%q, %s, %s): %v", tc.expr, tc.zone, tc.after, err)
			}
			want := mustTime(t, tc.want)
			if !got.Equal(want) {
				t.Fatalf("NextOccurrence(%q, %s, %s) = %s (%s), want %s (%s)", tc.expr, tc.zone, tc.after,
					got.Format(time.RFC3339), got.In(loc).Format("2006-01-02 15:04:05 MST"),
					want.Format(time.RFC3339), want.In(loc).Format("2006-01-02 15:04:05 MST"))
			}
			if got.Location() != time.UTC {
				t.Fatalf("result %v is not in UTC", got)
			}
			if !got.After(after) {
				t.Fatalf("result %s is not strictly after %s", got, after)
			}
		})
	}
}

// NextOccurrence across the DST transitions of New York and Berlin, and
// over each cron field, in one table.
func TestNextOccurrence(t *testing.T) {
	t.Parallel()
	const (
		ny     = "America/New_York"
		berlin = "Europe/Berlin"
		utc    = "UTC"
	)
	runOccurrenceCases(t, []occurrenceCase{
		// America/New_York: 2026-03-08 02:00 EST (UTC-5) jumps to 03:00 EDT
		// (UTC-4) at 07:00Z; 2026-11-01 02:00 EDT falls back to 01:00 EST at
		// 06:00Z.
		// Spring forward: 02:00-02:59 does not exist on 2026-03-08.
		{"gap time fires at end of gap", "30 2 * * *", ny, "2026-03-07T12:00:00Z", "2026-03-08T07:00:00Z"},
		{"gap day is not skipped (gronx alone jumps to the 9th)", "30 2 * * *", ny, "2026-03-08T06:59:59Z", "2026-03-08T07:00:00Z"},
		{"day after the gap is normal", "30 2 * * *", ny, "2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"},
		{"gap start fires at end of gap", "0 2 * * *", ny, "2026-03-07T12:00:00Z", "2026-03-08T07:00:00Z"},
		{"03:00 right after the gap", "0 3 * * *", ny, "2026-03-07T12:00:00Z", "2026-03-08T07:00:00Z"},
		{"last minute before the gap", "59 1 * * *", ny, "2026-03-07T12:00:00Z", "2026-03-08T06:59:00Z"},
		{"every 15 min collapses the gap", "*/15 * * * *", ny, "2026-03-08T06:45:00Z", "2026-03-08T07:00:00Z"},
		{"every 15 min resumes after the gap", "*/15 * * * *", ny, "2026-03-08T07:00:00Z", "2026-03-08T07:15:00Z"},
		{"every second across the gap", "* * * * * *", ny, "2026-03-08T06:59:59Z", "2026-03-08T07:00:00Z"},
		{"hourly across the gap", "0 * * * *", ny, "2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z"},
		{"hourly after the gap", "0 * * * *", ny, "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z"},
		{"seconds field in the gap", "15 30 2 * * *", ny, "2026-03-07T12:00:00Z", "2026-03-08T07:00:00Z"},
		// Fall back: 01:00-01:59 happens twice on 2026-11-01.
		{"repeated time fires at first occurrence", "30 1 * * *", ny, "2026-10-31T12:00:00Z", "2026-11-01T05:30:00Z"},
		{"repeated time does not fire twice", "30 1 * * *", ny, "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"},
		{"from the second pass, next day", "30 1 * * *", ny, "2026-11-01T06:10:00Z", "2026-11-02T06:30:00Z"},
		{"from the second pass, after the wall time", "30 1 * * *", ny, "2026-11-01T06:45:00Z", "2026-11-02T06:30:00Z"},
		// Issue 14: a wildcard or step hour fires in both passes (Vixie cron).
		{"every 15 min fires in the second pass", "*/15 * * * *", ny, "2026-11-01T05:45:00Z", "2026-11-01T06:00:00Z"},
		{"every 15 min from inside the second pass", "*/15 * * * *", ny, "2026-11-01T06:20:00Z", "2026-11-01T06:30:00Z"},
		{"every 15 min leaves the second pass", "*/15 * * * *", ny, "2026-11-01T06:45:00Z", "2026-11-01T07:00:00Z"},
		{"every 15 min in the first pass", "*/15 * * * *", ny, "2026-11-01T05:00:00Z", "2026-11-01T05:15:00Z"},
		{"hourly fires in both passes of the repeated hour", "0 * * * *", ny, "2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z"},
		{"hourly after the second pass", "0 * * * *", ny, "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z"},
		{"every 2 hours is a step: both passes", "30 */2 * * *", ny, "2026-11-01T04:00:00Z", "2026-11-01T04:30:00Z"},
		{"fixed hour list fires once", "30 1,2 * * *", ny, "2026-11-01T05:30:00Z", "2026-11-01T07:30:00Z"},
		{"fixed hour range fires once", "30 0-3 * * *", ny, "2026-11-01T05:30:00Z", "2026-11-01T07:30:00Z"},
		{"every second from the start of the second pass", "* * * * * *", ny, "2026-11-01T06:00:00Z", "2026-11-01T06:00:01Z"},
		{"every second at the end of the second pass", "* * * * * *", ny, "2026-11-01T06:59:59Z", "2026-11-01T07:00:00Z"},
		{"every second at the end of the first pass", "* * * * * *", ny, "2026-11-01T05:59:58Z", "2026-11-01T05:59:59Z"},
		{"02:00 after fall back", "0 2 * * *", ny, "2026-10-31T12:00:00Z", "2026-11-01T07:00:00Z"},
		{"midnight before fall back", "0 0 * * *", ny, "2026-10-31T12:00:00Z", "2026-11-01T04:00:00Z"},
		{"daily normal", "0 9 * * *", ny, "2026-06-01T00:00:00Z", "2026-06-01T13:00:00Z"},

		// Europe/Berlin: 2026-03-29 02:00 CET (UTC+1) jumps to 03:00 CEST
		// (UTC+2) at 01:00Z; 2026-10-25 03:00 CEST falls back to 02:00 CET at
		// 01:00Z.
		{"gap time fires at end of gap", "30 2 * * *", berlin, "2026-03-28T12:00:00Z", "2026-03-29T01:00:00Z"},
		{"day after the gap", "30 2 * * *", berlin, "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"},
		{"every 10 min across the gap", "*/10 * * * *", berlin, "2026-03-29T00:50:00Z", "2026-03-29T01:00:00Z"},
		{"daily across the gap", "@daily", berlin, "2026-03-28T23:30:00Z", "2026-03-29T22:00:00Z"},
		{"repeated time fires at first occurrence", "30 2 * * *", berlin, "2026-10-24T12:00:00Z", "2026-10-25T00:30:00Z"},
		{"repeated time does not fire twice", "30 2 * * *", berlin, "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"},
		{"from the second pass", "30 2 * * *", berlin, "2026-10-25T01:15:00Z", "2026-10-26T01:30:00Z"},
		{"03:00 after fall back", "0 3 * * *", berlin, "2026-10-24T12:00:00Z", "2026-10-25T02:00:00Z"},
		{"every 20 min fires in the second pass", "*/20 * * * *", berlin, "2026-10-25T00:40:00Z", "2026-10-25T01:00:00Z"},
		{"hourly fires in both passes", "0 * * * *", berlin, "2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z"},
		{"hourly after both passes", "0 * * * *", berlin, "2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z"},
		{"fixed 02:15 fires once", "15 2 * * *", berlin, "2026-10-25T00:15:00Z", "2026-10-26T01:15:00Z"},

		// The fields, in UTC.
		// Seconds field (6 fields, seconds first).
		{"every 10 seconds", "*/10 * * * * *", utc, "2026-01-01T12:00:05Z", "2026-01-01T12:00:10Z"},
		{"seconds at a fixed time", "30 0 12 * * *", utc, "2026-01-01T00:00:00Z", "2026-01-01T12:00:30Z"},
		{"every second", "* * * * * *", utc, "2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z"},
		{"second list wraps to next minute", "5,50 * * * * *", utc, "2026-01-01T00:00:51Z", "2026-01-01T00:01:05Z"},
		// Strictly after, in whole seconds.
		{"strictly after an exact tick", "0 12 * * *", utc, "2026-01-01T12:00:00Z", "2026-01-02T12:00:00Z"},
		{"just before a tick", "0 12 * * *", utc, "2026-01-01T11:59:59.999Z", "2026-01-01T12:00:00Z"},
		{"just after a tick", "0 12 * * *", utc, "2026-01-01T12:00:00.001Z", "2026-01-02T12:00:00Z"},
		{"year wrap", "0 0 1 1 *", utc, "2026-12-31T23:59:59Z", "2027-01-01T00:00:00Z"},
		// L, W, #.
		{"last day of February", "0 0 L * *", utc, "2026-02-10T00:00:00Z", "2026-02-28T00:00:00Z"},
		{"last day of leap February", "0 0 L * *", utc, "2028-02-10T00:00:00Z", "2028-02-29T00:00:00Z"},
		{"last day list", "0 0 1,L * *", utc, "2026-04-01T00:00:00Z", "2026-04-30T00:00:00Z"},
		{"last Friday", "0 0 * * 5L", utc, "2026-01-01T00:00:00Z", "2026-01-30T00:00:00Z"},
		{"second Monday", "0 0 * * 1#2", utc, "2026-01-01T00:00:00Z", "2026-01-12T00:00:00Z"},
		{"third Friday 09:00", "0 9 * * 5#3", utc, "2026-01-01T00:00:00Z", "2026-01-16T09:00:00Z"},
		{"fifth Monday skips months without one", "0 0 * * 1#5", utc, "2026-07-01T00:00:00Z", "2026-08-31T00:00:00Z"},
		{"nearest weekday, a weekday", "0 0 15W * *", utc, "2026-01-01T00:00:00Z", "2026-01-15T00:00:00Z"},
		{"nearest weekday of a Sunday", "0 0 15W * *", utc, "2026-02-01T00:00:00Z", "2026-02-16T00:00:00Z"},
		{"1W on a Saturday stays in the month", "0 0 1W * *", utc, "2026-07-15T00:00:00Z", "2026-08-03T00:00:00Z"},
		{"31W on a Sunday stays in the month", "0 0 31W * *", utc, "2026-05-15T00:00:00Z", "2026-05-29T00:00:00Z"},
		// Macros.
		{"@hourly", "@hourly", utc, "2026-03-04T10:20:00Z", "2026-03-04T11:00:00Z"},
		{"@daily", "@daily", utc, "2026-03-04T10:20:00Z", "2026-03-05T00:00:00Z"},
		{"@weekly is Sunday", "@weekly", utc, "2026-03-04T10:20:00Z", "2026-03-08T00:00:00Z"},
		{"@monthly", "@monthly", utc, "2026-03-04T10:20:00Z", "2026-04-01T00:00:00Z"},
		{"@yearly", "@yearly", utc, "2026-03-04T10:20:00Z", "2027-01-01T00:00:00Z"},
		{"@annually", "@annually", utc, "2026-03-04T10:20:00Z", "2027-01-01T00:00:00Z"},
		{"macro case-insensitive", "@DAILY", utc, "2026-03-04T10:20:00Z", "2026-03-05T00:00:00Z"},
		// Years, names, day combination.
		{"7 fields with a year", "0 0 0 1 1 * 2030", utc, "2026-03-04T00:00:00Z", "2030-01-01T00:00:00Z"},
		{"6 fields ending in a year", "0 0 1 1 * 2030", utc, "2026-03-04T00:00:00Z", "2030-01-01T00:00:00Z"},
		{"year step", "0 0 0 1 1 * */5", utc, "2026-03-04T00:00:00Z", "2030-01-01T00:00:00Z"},
		{"leap day", "0 0 29 2 *", utc, "2026-03-04T00:00:00Z", "2028-02-29T00:00:00Z"},
		{"names", "0 0 * JAN MON", utc, "2026-03-01T00:00:00Z", "2027-01-04T00:00:00Z"},
		{"day-of-month OR weekday", "0 0 13 * 5", utc, "2026-02-01T00:00:00Z", "2026-02-06T00:00:00Z"},
		{"step day-of-month AND weekday", "0 0 */2 * 5", utc, "2026-02-01T00:00:00Z", "2026-02-13T00:00:00Z"},
		{"Sunday as 7", "0 0 * * 7", utc, "2026-03-04T00:00:00Z", "2026-03-08T00:00:00Z"},
		{"weekday range", "0 8 * * 1-5", utc, "2026-03-06T09:00:00Z", "2026-03-09T08:00:00Z"},
		{"hour and minute lists", "5,35 9,17 * * *", utc, "2026-03-04T09:40:00Z", "2026-03-04T17:05:00Z"},
		{"range with step", "10-50/20 * * * *", utc, "2026-03-04T09:51:00Z", "2026-03-04T10:10:00Z"},
		{"start with step", "45/5 * * * *", utc, "2026-03-04T09:56:00Z", "2026-03-04T10:45:00Z"},
		{"time zone offset applies", "0 9 * * *", "Asia/Kathmandu", "2026-03-04T00:00:00Z", "2026-03-04T03:15:00Z"},
	})
}

func TestNextOccurrenceNilLocationIsUTC(t *testing.T) {
	t.Parallel()
	got, err := NextOccurrence("0 12 * * *", nil, mustTime(t, "2026-01-01T00:00:00Z"))
	if err != nil || !got.Equal(mustTime(t, "2026-01-01T12:00:00Z")) {
		t.Fatalf("got %v, %v", got, err)
	}
}

// A sequence of occurrences over a whole DST year in New York fires every
// day exactly once, at 02:30 local or, on the gap day, at 03:00 EDT.
func TestNextOccurrenceDailySequenceOverYear(t *testing.T) {
	t.Parallel()
	loc := mustLoc(t, "America/New_York")
	at := mustTime(t, "2026-01-01T00:00:00Z")
	seen := map[string]bool{}
	for i := 0; i < 365; i++ {
		next, err := NextOccurrence("30 2 * * *", loc, at)
		if err != nil {
			t.Fatal(err)
		}
		local := next.In(loc)
		day := local.Format("2006-01-02")
		if seen[day] {
			t.Fatalf("%s fired twice", day)
		}
		seen[day] = true
		wantClock := "02:30"
		if day == "2026-03-08" {
			wantClock = "03:00"
		}
		if got := local.Format("15:04"); got != wantClock {
			t.Fatalf("%s fired at %s, want %s", day, got, wantClock)
		}
		at = next
	}
	if len(seen) != 365 {
		t.Fatalf("fired on %d days, want 365", len(seen))
	}
}

// Every-15-minutes over both New York transitions: a strictly increasing
// sequence where no local time (wall clock and zone) repeats and none is skipped except the
// gap (collapsed into 03:00 EDT) and the second pass of the repeated hour.
func TestNextOccurrenceQuarterHoursOverTransitions(t *testing.T) {
	t.Parallel()
	loc := mustLoc(t, "America/New_York")
	for _, day := range []string{"2026-03-08", "2026-11-01"} {
		start := mustTime(t, day+"T00:00:00-05:00").Add(-time.Hour)
		at := start
		walls := map[string]bool{}
		for at.Before(start.Add(30 * time.Hour)) {
			next, err := NextOccurrence("*/15 * * * *", loc, at)
			if err != nil {
				t.Fatal(err)
			}
			if !next.After(at) {
				t.Fatalf("%s not after %s", next, at)
			}
			w := next.In(loc).Format("2006-01-02 15:04 MST")
			if walls[w] {
				t.Fatalf("wall time %s fired twice", w)
			}
			walls[w] = true
			at = next
		}
		// 30 hours of quarter hours in wall time, less the four gap slots
		// (02:00..02:45 collapse onto 03:00) or less nothing on fall back
		// (the repeated hour's four slots fire once each).
		for _, w := range []string{"01:45", "03:00", "03:15"} {
			if !hasWall(walls, day+" "+w) {
				t.Fatalf("%s %s did not fire", day, w)
			}
		}
		if day == "2026-11-01" {
			// Both passes of the repeated hour (issue 14).
			for _, w := range []string{"01:00 EDT", "01:15 EDT", "01:30 EDT", "01:45 EDT", "01:00 EST", "01:15 EST",
				"01:30 EST", "01:45 EST", "02:00 EST"} {
				if !walls[day+" "+w] {
					t.Fatalf("%s %s did not fire", day, w)
				}
			}
		}
	}
}

// Zones with unusual transitions: half-hour DST, DST at midnight, a skipped
// day.
func TestNextOccurrenceUnusualZones(t *testing.T) {
	t.Parallel()
	runOccurrenceCases(t, []occurrenceCase{
		// Lord Howe: 02:00 +1030 -> 02:30 +11 on 2026-10-04.
		{"half-hour gap", "15 2 * * *", "Australia/Lord_Howe", "2026-10-03T00:00:00Z", "2026-10-03T15:30:00Z"},
		// Samoa skipped 2011-12-30 entirely (UTC-10 to UTC+14).
		{"skipped day fires at the end of the gap", "0 12 * * *", "Pacific/Apia", "2011-12-29T23:00:00Z", "2011-12-30T10:00:00Z"},
		{"after the skipped day", "0 12 * * *", "Pacific/Apia", "2011-12-30T10:00:00Z", "2011-12-30T22:00:00Z"},
		// Sao Paulo 2018-11-04: 00:00 -03 jumped to 01:00 -02.
		{"midnight gap", "0 0 * * *", "America/Sao_Paulo", "2018-11-03T12:00:00Z", "2018-11-04T03:00:00Z"},
	})
}

func TestValidateCron(t *testing.T) {
	t.Parallel()
	valid := []string{
		"* * * * *", "*/5 * * * *", "0 0 * * *", "0 0 1 1 *", "0 */2 * * 1-5", "15,45 8-18 * * MON-FRI",
		"* * * * * *", "*/10 * * * * *", "0 0 0 1 1 * 2099", "0 0 1 1 * 2099",
		"@hourly", "@daily", "@weekly", "@monthly", "@yearly", "@annually",
		"0 0 L * *", "0 0 15W * *", "0 0 * * 5L", "0 0 * * 1#3", "0 0 ? * 1", "0 0 29 2 *", "0 0 * * 0,7",
		"  0 0 * * *  ", "0   0 * * *",
	}
	for _, expr := range valid {
		if err := ValidateCronSyntax(expr); err != nil {
			t.Errorf("ValidateCronSyntax(%q) = %v, want nil", expr, err)
		}
		if err := ValidateCron(expr); err != nil {
			t.Errorf("ValidateCron(%q) = %v, want nil", expr, err)
		}
	}
	invalid := []struct{ expr, mention string }{
		{"", "fields"},
		{"* * * *", "fields"},
		{"* * * * * * * *", "fields"},
		{"@reboot", "fields"},
		{"60 * * * *", "minute"},
		{"* 24 * * *", "hour"},
		{"* * 0 * *", "day-of-month"},
		{"* * 32 * *", "day-of-month"},
		{"* * * 13 *", "month"},
		{"* * * 0 *", "month"},
		{"* * * * 8", "weekday"},
		{"0,99 * * * *", "minute"}, // gronx.IsValid accepts this at minute 0
		{"*/0 * * * *", "minute"},
		{"a * * * *", "minute"},
		{"5-1 * * * *", "minute"},
		{"1-2-3 * * * *", "minute"},
		{"-1 * * * *", "minute"},
		{"1, * * * *", "minute"},
		{"* * * * 1#6", "weekday"},
		{"* * * * 1#0", "weekday"},
		{"* * * * 9L", "weekday"},
		{"* * * * L", "weekday"},
		{"* * 32W * *", "day-of-month"},
		{"* * 1#2 * *", "day-of-month"},
		{"61 * * * * *", "second"},
		{"0 0 0 1 1 * 10000", "year"},
		{"0 0 30 2 *", "never fires"},
		{"0 0 31 4,6,9,11 *", "never fires"},
		{"0 0 0 1 1 * 2020", "never fires"},
		{"0 0 0 29 2 * 2100", "never fires"},
		{"0 0 30W 2 *", "never fires"},
		{strings.Repeat("1,", 200) + "1 * * * *", "longer"},
	}
	for _, tc := range invalid {
		if err := ValidateCronSyntax(tc.expr); (err == nil) != (tc.mention == "never fires") {
			t.Errorf("ValidateCronSyntax(%q) = %v: the syntax check is not about firing", tc.expr, err)
		}
		err := ValidateCron(tc.expr)
		if err == nil {
			t.Errorf("ValidateCron(%q) = nil, want an error", tc.expr)
			continue
		}
		if !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("ValidateCron(%q) = %q, want it to mention %q", tc.expr, err, tc.mention)
		}
		if _, err := NextOccurrence(tc.expr, time.UTC, time.Now()); err == nil {
			t.Errorf("NextOccurrence(%q) accepted an invalid expression", tc.expr)
		}
	}
	if !errors.Is(ValidateCron("0 0 30 2 *"), ErrNeverFires) {
		t.Errorf("never-firing expression is not ErrNeverFires")
	}
}

func TestNextOccurrencePastYearLimit(t *testing.T) {
	t.Parallel()
	if _, err := NextOccurrence("0 0 1 1 *", time.UTC, mustTime(t, "9999-06-01T00:00:00Z")); !errors.Is(err, ErrNeverFires) {
		t.Fatalf("want ErrNeverFires past year 9999, got %v", err)
	}
}

func TestJobNextRun(t *testing.T) {
	t.Parallel()
	after := mustTime(t, "2026-03-07T12:00:00Z")
	cron := "30 2 * * *"
	j := &Job{CronExpr: &cron, Timezone: "America/New_York"}
	got, err := j.NextRun(after)
	if err != nil || got == nil || !got.Equal(mustTime(t, "2026-03-08T07:00:00Z")) {
		t.Fatalf("cron NextRun = %v, %v", got, err)
	}
	runAt := mustTime(t, "2026-05-01T10:00:00+02:00")
	j = &Job{RunAt: &runAt}
	got, err = j.NextRun(after)
	if err != nil || got == nil || !got.Equal(runAt) || got.Location() != time.UTC {
		t.Fatalf("one-shot NextRun = %v, %v", got, err)
	}
	j = &Job{}
	if got, err := j.NextRun(after); got != nil || err != nil {
		t.Fatalf("empty job NextRun = %v, %v", got, err)
	}
	// A schedule that has ended has no next run; that is no error.
	ended := "0 0 1 1 * 2020"
	j = &Job{CronExpr: &ended}
	if got, err := j.NextRun(after); got != nil || err != nil {
		t.Fatalf("ended cron NextRun = %v, %v, want none", got, err)
	}
	bad := "61 * * * *"
	j = &Job{CronExpr: &bad}
	if _, err := j.NextRun(after); err == nil {
		t.Fatal("malformed cron NextRun: want error")
	}
}

func BenchmarkNextOccurrence(b *testing.B) {
	loc := mustLoc(b, "America/New_York")
	after := mustTime(b, "2026-03-07T12:00:00Z")
	for b.Loop() {
		if _, err := NextOccurrence("30 2 * * *", loc, after); err != nil {
			b.Fatal(err)
		}
	}
}

// The worst cases of validation: expressions that never fire make the
// search walk its whole bound.
func BenchmarkValidateCronNeverFires(b *testing.B) {
	for _, expr := range []string{"0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 30 2 */2", "0 0 30W 2 *", "0 0 0 29 2 * 2100"} {
		b.Run(expr, func(b *testing.B) {
			for b.Loop() {
				if err := ValidateCron(expr); err == nil {
					b.Fatal("accepted")
				}
			}
		})
	}
}

func BenchmarkCompileCron(b *testing.B) {
	for b.Loop() {
		if _, err := compileCron("*/5 9-17 * * MON-FRI"); err != nil {
			b.Fatal(err)
		}
	}
}

func hasWall(walls map[string]bool, prefix string) bool {
	for w := range walls {
		if strings.HasPrefix(w, prefix) {
			return true
		}
	}
	return false
}
