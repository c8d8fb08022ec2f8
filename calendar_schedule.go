package chronos

import "time"

// Calendars in the timetable. A Schedule with calendars takes the
// occurrences of its expression (bounds and exclusions applied: step) and
// then, for each one whose local date, in the schedule's zone, is on one
// of its calendars:
//
//   - policy skip: drops it (Advance counts it, reason SkipCalendar);
//   - policy next_business_day: moves it to the same local wall time on
//     the next day that is on none of its calendars and is not a Saturday
//     or Sunday (DST rules as for any wall time: a time in a gap fires at
//     the transition, a repeated one at its first pass). A moved
//     occurrence that lands on an instant the expression has anyway is one
//     occurrence: the timetable is a set of instants, and a run's identity
//     is (job, scheduled_at), so each original occurrence gets at most one
//     run. One that would land past ends_at or in an excluded range, or
//     finds no business day within MaxBusinessDayShift days, is dropped.
//
// Only occurrences on a calendar date move: a weekend occurrence that is
// on no calendar runs as scheduled. The materializer (sql/plan.go) and
// the previews both step through this code, so a preview shows what runs.

// maxCalendarRounds bounds the days one step walks over (a calendar of
// MaxCalendarDates consecutive dates is the worst case).
const maxCalendarRounds = MaxCalendarDates + 2

// next is the schedule's next occurrence after `after`, calendars applied,
// with the occurrences passed over counted when count is set.
func (s *Schedule) next(after time.Time, count bool) (time.Time, Passed, bool) {
	var p Passed
	if len(s.cals) == 0 {
		t, ex, ok := s.step(after, count)
		p.Excluded = ex
		return t, p, ok
	}
	if s.policy == CalendarNextBusinessDay {
		t, ok := s.nextShifted(after)
		return t, p, ok
	}
	for range maxCalendarRounds {
		t, ex, ok := s.step(after, count)
		p.Excluded += ex
		if !ok {
			return time.Time{}, p, false
		}
		y, m, d := t.In(s.loc).Date()
		if s.calendarOn(y, m, d) == nil {
			return t, p, true
		}
		// Skip the rest of that local day at once: every occurrence on it
		// is on the calendar too.
		end := s.dayStart(y, m, d+1)
		if count {
			p.Calendar += s.countBefore(t, end)
		}
		after = end.Add(-time.Nanosecond)
	}
	return time.Time{}, p, false
}

// countBefore counts the occurrences (before calendars) from t (one) up to
// end, at most MaxExcludedCountedRange.
func (s *Schedule) countBefore(t, end time.Time) int {
	n := 1
	for n < MaxExcludedCountedRange {
		x, _, ok := s.step(t, false)
		if !ok || !x.Before(end) {
			break
		}
		n, t = n+1, x
	}
	return n
}

// nextShifted is next under next_business_day: the least of the first
// occurrence after `after` on no calendar date, and the moved instants
// after `after` of the occurrences on calendar dates. Those come from the
// calendar days of the run of non-business days that ends at after's
// date (their occurrences may have been before `after`, moved past it),
// and from the calendar days between `after` and that first plain
// occurrence.
func (s *Schedule) nextShifted(after time.Time) (time.Time, bool) {
	var best time.Time
	consider := func(c time.Time) {
		if c.After(after) && (best.IsZero() || c.Before(best)) {
			best = c
		}
	}
	al := after.In(s.loc)
	ay, am, ad := al.Date()
	// Back over the non-business days up to after's date: a calendar day
	// among them moved its occurrences to the first business day after
	// the run, which is after's date or later.
	aBusiness := s.businessDay(ay, am, ad)
	for k := 0; k <= MaxBusinessDayShift; k++ {
		y, m, d := civil(ay, am, ad-k)
		if k > 0 && s.businessDay(y, m, d) {
			break
		}
		if s.calendarOn(y, m, d) == nil {
			continue
		}
		from := s.dayStart(y, m, d).Add(-time.Nanosecond)
		if aBusiness && k > 0 {
			// Moved onto after's date: only the wall times after
			// after's own are still to come.
			h, mi, sec := al.Clock()
			w, _ := resolveWall(time.Date(y, m, d, h, mi, sec, 0, time.UTC), s.loc)
			from = w.Add(-time.Nanosecond)
		}
		end := s.dayStart(y, m, d+1)
		for x, _, ok := s.step(from, false); ok && x.Before(end); x, _, ok = s.step(x, false) {
			if c, _, ok := s.shift(x); ok && c.After(after) {
				consider(c)
				break
			}
		}
	}
	// Forward: plain occurrences end the search; a calendar day on the
	// way offers its first occurrence, moved.
	x := after
	for range maxCalendarRounds {
		t, _, ok := s.step(x, false)
		if !ok || (!best.IsZero() && !t.Before(best)) {
			break // moved instants are never earlier than their originals
		}
		y, m, d := t.In(s.loc).Date()
		if s.calendarOn(y, m, d) == nil {
			consider(t)
			break
		}
		if c, _, ok := s.shift(t); ok {
			consider(c)
		}
		x = s.dayStart(y, m, d+1).Add(-time.Nanosecond)
	}
	return best, !best.IsZero()
}

// shift moves an occurrence on a calendar date to the same wall time on
// the next business day; false when it is dropped (see above). It also
// returns the calendar that moved it.
func (s *Schedule) shift(t time.Time) (time.Time, *CalendarDays, bool) {
	l := t.In(s.loc)
	y, m, d := l.Date()
	cal := s.calendarOn(y, m, d)
	if cal == nil {
		return t, nil, true
	}
	h, mi, sec := l.Clock()
	for k := 1; k <= MaxBusinessDayShift; k++ {
		ny, nm, nd := civil(y, m, d+k)
		if !s.businessDay(ny, nm, nd) {
			continue
		}
		w, _ := resolveWall(time.Date(ny, nm, nd, h, mi, sec, 0, time.UTC), s.loc)
		w = w.UTC()
		if s.ends != nil && w.After(*s.ends) {
			return time.Time{}, cal, false
		}
		if _, ex := s.exclusionAt(w); ex {
			return time.Time{}, cal, false
		}
		return w, cal, true
	}
	return time.Time{}, cal, false
}

// calendarOn returns the first of the schedule's calendars that holds the
// civil date, or nil.
func (s *Schedule) calendarOn(y int, m time.Month, d int) *CalendarDays {
	for _, c := range s.cals {
		if c.Has(y, m, d) {
			return c
		}
	}
	return nil
}

// businessDay: a weekday on none of the calendars.
func (s *Schedule) businessDay(y int, m time.Month, d int) bool {
	wd := weekday(y, m, d)
	return wd != time.Saturday && wd != time.Sunday && s.calendarOn(y, m, d) == nil
}

// dayStart is the first instant of a local date (its midnight, or the
// transition that ends a gap holding it). d may overflow the month.
func (s *Schedule) dayStart(y int, m time.Month, d int) time.Time {
	y, m, d = civil(y, m, d)
	t, _ := resolveWall(time.Date(y, m, d, 0, 0, 0, 0, time.UTC), s.loc)
	return t.UTC()
}

// civil normalises a date whose day may be out of range.
func civil(y int, m time.Month, d int) (int, time.Month, int) {
	if d >= 1 && d <= 28 {
		return y, m, d
	}
	return time.Date(y, m, d, 12, 0, 0, 0, time.UTC).Date()
}

// weekday of a civil date (1970-01-01 was a Thursday).
func weekday(y int, m time.Month, d int) time.Weekday {
	n := (int(dayNumber(y, m, d)) + 4) % 7
	if n < 0 {
		n += 7
	}
	return time.Weekday(n)
}

// CalendarEffect is what a calendar did to one occurrence: skipped it,
// or moved it (To; nil when it was dropped for want of a business day).
type CalendarEffect struct {
	At       time.Time  `json:"at"`
	Date     string     `json:"date"` // At's local date, the calendar's
	Calendar string     `json:"calendar"`
	To       *time.Time `json:"to,omitempty"`
}

// CalendarEffects lists, in order, the occurrences of the expression in
// (after, until] that fell on a calendar date, with what became of each
// (at most max). Under skip they are the skipped ones; under
// next_business_day the moved ones.
func (s *Schedule) CalendarEffects(after, until time.Time, max int) []CalendarEffect {
	var out []CalendarEffect
	if len(s.cals) == 0 {
		return out
	}
	for x := after; len(out) < max; {
		t, _, ok := s.step(x, false)
		if !ok || t.After(until) {
			break
		}
		l := t.In(s.loc)
		y, m, d := l.Date()
		cal := s.calendarOn(y, m, d)
		if cal == nil {
			// Jump to the next calendar date's occurrences would need an
			// index; a plain occurrence is one step.
			x = t
			continue
		}
		e := CalendarEffect{At: t, Date: l.Format(dateLayout), Calendar: cal.Name}
		if s.policy == CalendarNextBusinessDay {
			if to, _, ok := s.shift(t); ok {
				e.To = &to
			}
		}
		out = append(out, e)
		x = t
	}
	return out
}

// MaxPreviewEffects bounds the skipped and shifted occurrences a preview
// lists.
const MaxPreviewEffects = 1000

// addCalendarEffects lists the calendar's doings in (after, until].
func (p *Preview) addCalendarEffects(s *Schedule, after, until time.Time) {
	for _, e := range s.CalendarEffects(after, until, MaxPreviewEffects) {
		if s.policy == CalendarNextBusinessDay {
			p.Shifted = append(p.Shifted, e)
		} else {
			p.Skipped = append(p.Skipped, e)
		}
	}
}
