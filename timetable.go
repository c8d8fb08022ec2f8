package chronos

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// Schedule is a cron job's timetable: its expression in its time zone (with
// the DST rules of NextOccurrence), bounded by starts_at and ends_at, minus
// its excluded date ranges. It is pure and immutable. The materializer
// (sql/plan.go) and the previews (GET /v1/jobs/{id}/schedule, POST
// /v1/schedule/preview) both read occurrences from it, so a preview is
// what the materializer will create. Jitter is not part of it: previews
// and scheduled_at show the nominal instants.
type Schedule struct {
	expr    string
	spec    *cronSpec
	loc     *time.Location
	anchor  time.Time  // @every: occurrences are anchor + k·interval
	starts  *time.Time // inclusive
	ends    *time.Time // inclusive
	exclude []span     // sorted by start
	cals    []*CalendarDays
	policy  CalendarPolicy
}

// ScheduleSpec is what a Schedule is built from.
type ScheduleSpec struct {
	CronExpr string
	Timezone string
	StartsAt *time.Time
	EndsAt   *time.Time
	Exclude  []DateRange
	// Anchor is where "@every" intervals count from: starts_at when set,
	// else this (the job's creation). It is truncated to whole seconds.
	Anchor time.Time
	// Calendars are the job's calendars, compiled; Policy says what an
	// occurrence on one of their dates does (default skip). See
	// calendar_schedule.go.
	Calendars []*CalendarDays
	Policy    CalendarPolicy
}

// NewSchedule builds a schedule. Its errors are EINVALID and name the
// field at fault (cron_expr, timezone, exclude).
func NewSchedule(s ScheduleSpec) (*Schedule, error) {
	f := map[string]string{}
	loc, err := cachedZone(s.Timezone)
	if err != nil {
		f["timezone"] = err.Error()
		loc = time.UTC
	}
	spec, err := parseCron(s.CronExpr)
	if err != nil {
		f["cron_expr"] = err.Error()
	}
	sc := &Schedule{expr: s.CronExpr, spec: spec, loc: loc, starts: utcp(s.StartsAt), ends: utcp(s.EndsAt),
		cals: s.Calendars, policy: s.Policy}
	if sc.policy == "" {
		sc.policy = CalendarSkip
	}
	sc.anchor = s.Anchor
	if sc.starts != nil {
		sc.anchor = *sc.starts
	}
	sc.anchor = sc.anchor.UTC().Truncate(time.Second)
	if len(s.Exclude) > MaxExclusions {
		f["exclude"] = fmt.Sprintf("at most %d date ranges", MaxExclusions)
	}
	for i, r := range s.Exclude {
		sp, err := parseDateRange(r, loc)
		if err != nil {
			f["exclude"] = fmt.Sprintf("entry %d: %v", i, err)
			break
		}
		sc.exclude = append(sc.exclude, sp)
	}
	if len(f) > 0 {
		return nil, InvalidFields(f)
	}
	sort.Slice(sc.exclude, func(a, b int) bool { return sc.exclude[a].start.Before(sc.exclude[b].start) })
	return sc, nil
}

// Schedule returns the job's schedule, or nil for a one-shot.
func (j *Job) Schedule() (*Schedule, error) {
	if j.CronExpr == nil {
		return nil, nil
	}
	return NewSchedule(ScheduleSpec{CronExpr: *j.CronExpr, Timezone: j.Timezone, StartsAt: j.StartsAt,
		EndsAt: j.EndsAt, Exclude: j.Exclude, Anchor: j.CreatedAt, Calendars: j.calendarDays, Policy: j.CalendarPolicy})
}

// zoneCache holds the zones schedules were built in: the materializer
// builds one per due job per tick, and time.LoadLocation reads the zone
// file every time. Only valid names are stored, so it stays bounded by the
// zone database.
var zoneCache sync.Map // name → *time.Location

func cachedZone(name string) (*time.Location, error) {
	if l, ok := zoneCache.Load(name); ok {
		return l.(*time.Location), nil
	}
	loc, err := LoadTimezone(name)
	if err != nil {
		return nil, err
	}
	zoneCache.Store(name, loc)
	return loc, nil
}

func utcp(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// Location returns the schedule's time zone.
func (s *Schedule) Location() *time.Location { return s.loc }

// Next returns the first occurrence strictly after `after`, or false when
// there is none (past ends_at, or the expression never fires again).
func (s *Schedule) Next(after time.Time) (time.Time, bool) {
	t, _, ok := s.next(after, false)
	return t, ok
}

// Step is Next that also counts the occurrences it passed over because
// they fell in an excluded range (at most MaxExcludedCountedRange per
// range: the count is for metrics, not for the timetable).
func (s *Schedule) Step(after time.Time) (next time.Time, excluded int, ok bool) {
	t, n, ok := s.next(after, true)
	return t, n.Excluded, ok
}

// Passed counts the occurrences a step passed over, by reason.
type Passed struct {
	Excluded int // in an excluded date range (SkipExcluded)
	Calendar int // on a calendar date, under policy skip (SkipCalendar)
}

// Advance is Step with every reason counted: the materializer's step.
func (s *Schedule) Advance(after time.Time) (next time.Time, passed Passed, ok bool) {
	return s.next(after, true)
}

// Preview returns up to n occurrences after `after`, in order.
func (s *Schedule) Preview(after time.Time, n int) []time.Time {
	out := make([]time.Time, 0, n)
	for len(out) < n {
		t, ok := s.Next(after)
		if !ok {
			break
		}
		out = append(out, t)
		after = t
	}
	return out
}

// Excluded reports whether t falls in an excluded date range.
func (s *Schedule) Excluded(t time.Time) bool {
	_, ok := s.exclusionAt(t)
	return ok
}

func (s *Schedule) exclusionAt(t time.Time) (span, bool) {
	// Few ranges (at most MaxExclusions): a scan is cheaper than a search.
	for _, r := range s.exclude {
		if r.start.After(t) {
			break
		}
		if t.Before(r.end) {
			return r, true
		}
	}
	return span{}, false
}

// step is the next occurrence before calendars: bounds and exclusions
// applied (calendar_schedule.go puts the calendars on top).
func (s *Schedule) step(after time.Time, count bool) (time.Time, int, bool) {
	if s.starts != nil && after.Before(*s.starts) {
		after = s.starts.Add(-time.Nanosecond) // starts_at itself may fire
	}
	excluded := 0
	// Each round either returns or jumps past one excluded range.
	for range len(s.exclude) + 2 {
		t, ok := s.raw(after)
		if !ok || (s.ends != nil && t.After(*s.ends)) {
			return time.Time{}, excluded, false
		}
		r, in := s.exclusionAt(t)
		if !in {
			return t, excluded, true
		}
		if count {
			excluded += s.countWithin(t, r)
		}
		after = r.end.Add(-time.Nanosecond)
	}
	return time.Time{}, excluded, false
}

// countWithin counts the raw occurrences from t (one) up to r's end.
func (s *Schedule) countWithin(t time.Time, r span) int {
	n := 1
	for n < MaxExcludedCountedRange {
		x, ok := s.raw(t)
		if !ok || !x.Before(r.end) || (s.ends != nil && x.After(*s.ends)) {
			break
		}
		n, t = n+1, x
	}
	return n
}

// raw is the expression's next occurrence, before exclusions and ends_at.
func (s *Schedule) raw(after time.Time) (time.Time, bool) {
	if s.spec.every > 0 {
		return s.spec.nextEvery(s.anchor, after)
	}
	t, err := s.spec.nextAfter(s.loc, after)
	return t, err == nil
}
