// Package ical turns iCalendar text (RFC 5545) into the dates of a
// chronos calendar. It reads the VEVENTs of a VCALENDAR with
// github.com/arran4/golang-ical and expands their recurrences with
// github.com/teambition/rrule-go:
//
//   - each VEVENT covers the dates from its DTSTART up to, not including,
//     its DTEND (one date without DTEND; an all-day event's DTEND is the
//     day after its last date, as RFC 5545 says). A DATE-TIME start counts
//     by the date written in it: calendars are days, not instants;
//   - RRULE (FREQ=YEARLY, MONTHLY, WEEKLY or DAILY: holidays are days, so
//     HOURLY and finer are refused), RDATE and EXDATE apply as in RFC
//     5545; recurrences are expanded through MaxCalendarYear, and a
//     recurring event may not start before 1900;
//   - a VEVENT with STATUS:CANCELLED is left out; other components
//     (VTIMEZONE, VTODO, ...) are ignored.
//
// The result is a sorted list of distinct dates (YYYY-MM-DD), at most
// chronos.MaxCalendarDates. The package is pure: no I/O, no clock.
package ical

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	goical "github.com/arran4/golang-ical"
	"github.com/teambition/rrule-go"

	"github.com/chronoshq/chronos"
)

const dateLayout = "2006-01-02"

// maxIterations bounds the rule iterations of one parse (an impossible
// rule such as FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30 walks every day up to
// MaxCalendarYear and yields nothing).
const maxIterations = 400000

// errTooMany is the error of a calendar past chronos.MaxCalendarDates.
var errTooMany = fmt.Errorf("the calendar holds more than %d dates", chronos.MaxCalendarDates)

// Dates parses iCalendar text and returns the dates its events cover.
// Its errors say what is wrong in words fit for a 400 (the caller names
// the field).
func Dates(text string) (dates []string, err error) {
	if len(text) > chronos.MaxCalendarICalBytes {
		return nil, fmt.Errorf("at most %d bytes", chronos.MaxCalendarICalBytes)
	}
	if strings.TrimSpace(text) == "" {
		return nil, errors.New("is empty: a VCALENDAR is required")
	}
	defer func() {
		// The parser is third-party code fed user input: a panic there is
		// a bad calendar, not a crashed server.
		if r := recover(); r != nil {
			dates, err = nil, fmt.Errorf("cannot be parsed: %v", r)
		}
	}()
	cal, err := goical.ParseCalendar(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("cannot be parsed: %w", err)
	}
	set := map[string]struct{}{}
	iterations := 0
	for i, ev := range cal.Events() {
		if err := addEvent(ev, set, &iterations); err != nil {
			return nil, fmt.Errorf("event %d%s: %w", i+1, summaryOf(ev), err)
		}
		if len(set) > chronos.MaxCalendarDates {
			return nil, errTooMany
		}
	}
	dates = make([]string, 0, len(set))
	for d := range set {
		dates = append(dates, d)
	}
	slices.Sort(dates)
	return dates, nil
}

// summaryOf names an event in an error: its SUMMARY, quoted, if any.
func summaryOf(ev *goical.VEvent) string {
	if p := ev.GetProperty(goical.ComponentPropertySummary); p != nil && p.Value != "" {
		s := p.Value
		if len(s) > 60 {
			s = s[:60]
		}
		return fmt.Sprintf(" (%q)", s)
	}
	return ""
}

// addEvent adds the dates of one VEVENT to set.
func addEvent(ev *goical.VEvent, set map[string]struct{}, iterations *int) error {
	if p := ev.GetProperty(goical.ComponentPropertyStatus); p != nil && strings.EqualFold(p.Value, "CANCELLED") {
		return nil
	}
	sp := ev.GetProperty(goical.ComponentPropertyDtStart)
	if sp == nil {
		return errors.New("has no DTSTART")
	}
	start, err := parseDate(sp.Value)
	if err != nil {
		return fmt.Errorf("DTSTART: %w", err)
	}
	days := 1
	if ep := ev.GetProperty(goical.ComponentPropertyDtEnd); ep != nil {
		end, err := parseDate(ep.Value)
		if err != nil {
			return fmt.Errorf("DTEND: %w", err)
		}
		days = int(end.Sub(start).Hours() / 24)
		if v := strings.TrimSpace(ep.Value); isDateTime(v) && !strings.HasPrefix(v[9:], "000000") {
			days++ // a DATE-TIME end inside a day covers that day
		}
		if days < 1 {
			days = 1
		}
		if days > 366 {
			return errors.New("lasts more than 366 days")
		}
	}
	starts := []time.Time{start}
	rules := ev.GetProperties(goical.ComponentPropertyRrule)
	if len(rules) > 0 {
		if start.Year() < 1900 {
			return errors.New("a recurring event may not start before 1900")
		}
		starts = nil
		for _, rp := range rules {
			ts, err := expand(rp.Value, start, iterations)
			if err != nil {
				return err
			}
			starts = append(starts, ts...)
		}
	}
	for _, p := range ev.GetProperties(goical.ComponentPropertyRdate) {
		ds, err := parseDateList(p.Value)
		if err != nil {
			return fmt.Errorf("RDATE: %w", err)
		}
		starts = append(starts, ds...)
	}
	ex := map[string]bool{}
	for _, p := range ev.GetProperties(goical.ComponentPropertyExdate) {
		ds, err := parseDateList(p.Value)
		if err != nil {
			return fmt.Errorf("EXDATE: %w", err)
		}
		for _, d := range ds {
			ex[d.Format(dateLayout)] = true
		}
	}
	for _, s := range starts {
		if ex[s.Format(dateLayout)] {
			continue
		}
		for k := range days {
			d := s.AddDate(0, 0, k)
			if d.Year() > chronos.MaxYear {
				break
			}
			set[d.Format(dateLayout)] = struct{}{}
			if len(set) > chronos.MaxCalendarDates {
				return errTooMany
			}
		}
	}
	return nil
}

// expand returns the starts of an RRULE from start, through
// MaxCalendarYear.
func expand(rule string, start time.Time, iterations *int) ([]time.Time, error) {
	opt, err := rrule.StrToROption(rule)
	if err != nil {
		return nil, fmt.Errorf("RRULE %q: %w", rule, err)
	}
	if opt.Freq > rrule.DAILY {
		return nil, fmt.Errorf("RRULE %q: FREQ must be YEARLY, MONTHLY, WEEKLY or DAILY (a calendar holds days)", rule)
	}
	opt.Dtstart = start
	limit := time.Date(chronos.MaxCalendarYear, 12, 31, 23, 59, 59, 0, time.UTC)
	if opt.Until.IsZero() || opt.Until.After(limit) {
		opt.Until = limit
	}
	r, err := rrule.NewRRule(*opt)
	if err != nil {
		return nil, fmt.Errorf("RRULE %q: %w", rule, err)
	}
	var out []time.Time
	next := r.Iterator()
	for {
		*iterations++
		if *iterations > maxIterations {
			return nil, fmt.Errorf("RRULE %q: too many recurrences", rule)
		}
		t, ok := next()
		if !ok {
			return out, nil
		}
		out = append(out, t)
		if len(out) > chronos.MaxCalendarDates {
			return nil, errTooMany
		}
	}
}

// parseDate reads a DATE (20261225) or the date of a DATE-TIME
// (20261225T090000[Z]) as midnight UTC of that date.
func parseDate(v string) (time.Time, error) {
	v = strings.TrimSpace(v)
	if len(v) < 8 {
		return time.Time{}, fmt.Errorf("%q is not a date (YYYYMMDD)", v)
	}
	if len(v) > 8 && v[8] != 'T' {
		return time.Time{}, fmt.Errorf("%q is not a date (YYYYMMDD)", v)
	}
	t, err := time.Parse("20060102", v[:8])
	if err != nil || t.Year() < chronos.MinYear {
		return time.Time{}, fmt.Errorf("%q is not a date (YYYYMMDD)", v)
	}
	return t, nil
}

// isDateTime reports whether a value is a DATE-TIME.
func isDateTime(v string) bool { return len(v) > 8 && v[8] == 'T' }

// parseDateList reads a comma-separated RDATE or EXDATE value.
func parseDateList(v string) ([]time.Time, error) {
	var out []time.Time
	for _, p := range strings.Split(v, ",") {
		if strings.Contains(p, "/") {
			return nil, fmt.Errorf("%q: periods are not supported", p)
		}
		t, err := parseDate(p)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}
