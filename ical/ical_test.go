package ical

import (
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/chronoshq/chronos"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func vcal(events ...string) string {
	return "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//chronos//test//EN\r\n" + strings.Join(events, "") + "END:VCALENDAR\r\n"
}

func vevent(lines ...string) string {
	return "BEGIN:VEVENT\r\nUID:" + lines[0] + "\r\nDTSTAMP:20260101T000000Z\r\n" + strings.Join(lines[1:], "\r\n") + "\r\nEND:VEVENT\r\n"
}

const usHolidays = `BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//chronos//us holidays//EN
BEGIN:VEVENT
UID:christmas
DTSTAMP:20260101T000000Z
SUMMARY:Christmas Day
DTSTART;VALUE=DATE:20261225
DTEND;VALUE=DATE:20261226
RRULE:FREQ=YEARLY;COUNT=3
END:VEVENT
BEGIN:VEVENT
UID:thanksgiving
DTSTAMP:20260101T000000Z
SUMMARY:Thanksgiving Day
DTSTART;VALUE=DATE:20261126
RRULE:FREQ=YEARLY;BYMONTH=11;BYDAY=4TH;UNTIL=20281231
END:VEVENT
BEGIN:VEVENT
UID:closure
DTSTAMP:20260101T000000Z
SUMMARY:Office closed
DTSTART;VALUE=DATE:20261228
DTEND;VALUE=DATE:20261231
END:VEVENT
END:VCALENDAR
`

// wantDates checks that Dates(text) is want (the dates joined by spaces).
func wantDates(t *testing.T, text, want string) {
	t.Helper()
	got, err := Dates(text)
	if err != nil {
		t.Fatal(err)
	}
	if g := strings.Join(got, " "); g != want {
		t.Fatalf("got  %s\nwant %s", g, want)
	}
}

func TestDatesAllDayAndYearlyRules(t *testing.T) {
	t.Parallel()
	wantDates(t, usHolidays, "2026-11-26 2026-12-25 2026-12-28 2026-12-29 2026-12-30 2027-11-25 2027-12-25 2028-11-23 2028-12-25")
}

func TestDatesExdateRdateCancelled(t *testing.T) {
	t.Parallel()
	text := vcal(
		vevent("a", "DTSTART;VALUE=DATE:20260101", "RRULE:FREQ=YEARLY;UNTIL=20290101", "EXDATE;VALUE=DATE:20270101", "RDATE;VALUE=DATE:20260704,20270704"),
		vevent("b", "STATUS:CANCELLED", "DTSTART;VALUE=DATE:20260505"),
		vevent("c", "DTSTART:20260601T090000Z", "DTEND:20260602T100000Z"),
	)
	wantDates(t, text, "2026-01-01 2026-06-01 2026-06-02 2026-07-04 2027-07-04 2028-01-01 2029-01-01")
}

func TestDatesUnboundedRuleStopsAtMaxCalendarYear(t *testing.T) {
	t.Parallel()
	got, err := Dates(vcal(vevent("a", "DTSTART;VALUE=DATE:20260704", "RRULE:FREQ=YEARLY")))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != chronos.MaxCalendarYear-2026+1 || got[len(got)-1] != "2100-07-04" {
		t.Fatalf("%d dates, last %s", len(got), got[len(got)-1])
	}
}

func TestDatesErrors(t *testing.T) {
	t.Parallel()
	for name, text := range map[string]string{
		"empty":       "",
		"garbage":     "hello",
		"no dtstart":  vcal(vevent("a", "SUMMARY:x")),
		"bad date":    vcal(vevent("a", "DTSTART;VALUE=DATE:2026-12-25")),
		"hourly":      vcal(vevent("a", "DTSTART;VALUE=DATE:20261225", "RRULE:FREQ=HOURLY")),
		"bad rule":    vcal(vevent("a", "DTSTART;VALUE=DATE:20261225", "RRULE:FREQ=SOMETIMES")),
		"too many":    vcal(vevent("a", "DTSTART;VALUE=DATE:20260101", "RRULE:FREQ=DAILY")),
		"before 1900": vcal(vevent("a", "DTSTART;VALUE=DATE:18000101", "RRULE:FREQ=YEARLY")),
		"period":      vcal(vevent("a", "DTSTART;VALUE=DATE:20260101", "RDATE;VALUE=PERIOD:20260101T000000Z/PT1H")),
	} {
		if got, err := Dates(text); err == nil {
			t.Errorf("%s: no error (%d dates)", name, len(got))
		}
	}
}

// FuzzDates: whatever the text, Dates returns an error or sorted,
// distinct, valid dates within the limit; it never panics or hangs.
func FuzzDates(f *testing.F) {
	f.Add(usHolidays)
	f.Add(vcal(vevent("a", "DTSTART;VALUE=DATE:20260101", "RRULE:FREQ=MONTHLY;BYMONTHDAY=-1;COUNT=24")))
	f.Add(vcal(vevent("a", "DTSTART;VALUE=DATE:20260101", "RRULE:FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30")))
	f.Add(vcal(vevent("a", "DTSTART;VALUE=DATE:20260101", "RRULE:FREQ=WEEKLY;BYDAY=SA,SU;UNTIL=20270101")))
	f.Fuzz(func(t *testing.T, text string) {
		dates, err := Dates(text)
		if err != nil {
			return
		}
		if len(dates) > chronos.MaxCalendarDates {
			t.Fatalf("%d dates", len(dates))
		}
		if _, err := chronos.NormalizeDates(dates); err != nil {
			t.Fatalf("invalid dates: %v", err)
		}
		for i := 1; i < len(dates); i++ {
			if dates[i-1] >= dates[i] {
				t.Fatalf("not sorted and distinct at %d: %s %s", i, dates[i-1], dates[i])
			}
		}
	})
}
