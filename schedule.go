package chronos

import (
	"errors"
	"fmt"
	"time"
)

// Schedules are evaluated on the wall clock of the job's time zone. The
// expression is matched against a zone-free wall clock (the local date and
// time written as if they were UTC), and each due wall time is then mapped
// back to an instant in the zone with two DST rules:
//
//   - A wall time that does not exist (spring forward: 02:30 on
//     2026-03-08 in America/New_York) fires once, at the first instant after
//     the gap (03:00 EDT, the transition itself). Every due wall time inside
//     one gap maps to that same instant, so "*/15 * * * *" fires once at
//     03:00 for 02:00, 02:15, 02:30, 02:45 and 03:00 together.
//   - A wall time that happens twice (fall back: 01:30 on 2026-11-01 in
//     America/New_York) fires once, at its first occurrence (01:30 EDT).
//     This holds for every field: a wall time fires once, so the repeated
//     hour's wall times fire only in the first pass and "*/15 * * * *" goes
//     from 01:45 EDT to 02:00 EST, 75 minutes later. The next occurrence
//     after an instant in the second pass is never a wall time that already
//     fired in the first.
//
// Occurrences are always strictly after the reference instant, in whole
// seconds.

// ValidateCronSyntax checks that a cron expression is well-formed: 5
// fields (minute hour day month weekday), an optional leading seconds
// field (6 fields), an optional trailing year (7 fields, or 6 when the
// last is a 4-digit year), the macros (@yearly, @annually, @monthly,
// @weekly, @daily, @hourly and gronx's others), names (JAN, MON), and L,
// W, #. It does not ask whether the expression fires (again): a stored
// schedule that has ended is still well-formed.
func ValidateCronSyntax(expr string) error {
	_, err := parseCron(expr)
	return err
}

// ValidateCron checks a cron expression's syntax (ValidateCronSyntax) and
// also rejects one that never fires again on a UTC wall clock (e.g.
// "0 0 30 2 *", or a year that has passed), with ErrNeverFires; that check
// costs at most a few milliseconds. A job's own check, in its time zone,
// is Job.ValidateSchedule.
func ValidateCron(expr string) error {
	c, err := parseCron(expr)
	if err != nil {
		return err
	}
	if _, ok := c.nextWall(time.Now().UTC().Truncate(time.Second)); !ok {
		return ErrNeverFires
	}
	return nil
}

// NextOccurrence returns the first occurrence of expr strictly after
// `after`, evaluated on the wall clock of loc (nil is UTC), in UTC, with
// the DST rules above. An invalid expression, or one without a further
// occurrence, is an error.
func NextOccurrence(expr string, loc *time.Location, after time.Time) (time.Time, error) {
	c, err := parseCron(expr)
	if err != nil {
		return time.Time{}, fmt.Errorf("next occurrence of %q: %w", expr, err)
	}
	if loc == nil {
		loc = time.UTC
	}
	t, err := c.nextAfter(loc, after)
	if err != nil {
		return time.Time{}, fmt.Errorf("next occurrence of %q in %s: %w", expr, loc, err)
	}
	return t, nil
}

func (c *cronSpec) nextAfter(loc *time.Location, after time.Time) (time.Time, error) {
	wall := wallClock(after.In(loc))
	// Each round moves forward in wall time; more than two rounds only
	// happen in a zone with several transitions within a day.
	for range 64 {
		due, ok := c.nextWall(wall.Truncate(time.Second).Add(time.Second))
		if !ok {
			return time.Time{}, ErrNeverFires
		}
		t, zoneEndWall := resolveWall(due, loc)
		if t.After(after) {
			if t.UTC().Year() > cronMaxYear {
				return time.Time{}, ErrNeverFires
			}
			return t.UTC(), nil
		}
		// The first occurrence of this wall time is not after `after`:
		// `after` is in the second pass over a repeated stretch, and so are
		// all the wall times up to the end of the zone that held their first
		// occurrence. They fired already: resume after them.
		wall = due
		if zoneEndWall.After(due) {
			wall = zoneEndWall.Add(-time.Second)
		}
	}
	return time.Time{}, fmt.Errorf("no occurrence found after %s", after.UTC().Format(time.RFC3339))
}

// wallClock returns t's wall-clock date and time written as a UTC time.
func wallClock(t time.Time) time.Time {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	return time.Date(y, mo, d, h, mi, s, t.Nanosecond(), time.UTC)
}

// resolveWall maps a wall-clock time (written as UTC) to an instant in loc:
// its first occurrence, or, when it falls in a gap, the transition that
// ends the gap. It also returns the wall time at which the zone period of
// the returned instant ends (zero when it does not end), which lets the
// caller skip the rest of a repeated stretch.
//
// It walks the zone periods that can hold that wall time (offsets stay
// within ±26h) with ZoneBounds, instead of trusting time.Date, whose choice
// in a gap or an overlap is documented as not guaranteed.
func resolveWall(w time.Time, loc *time.Location) (time.Time, time.Time) {
	const window = 26 * 3600
	wu := w.Unix()
	t := time.Unix(wu-window, 0).In(loc)
	prevOff, havePrev := 0, false
	// Real zones have a few periods in 52 hours; the bound and the progress
	// check below guard against ZoneBounds not advancing (seen near year
	// 9992 in America/New_York: end == t).
	for range 32 {
		start, end := t.ZoneBounds()
		_, off := t.Zone()
		cand := wu - int64(off)
		afterStart := start.IsZero() || cand >= start.Unix()
		beforeEnd := end.IsZero() || cand < end.Unix()
		if afterStart && beforeEnd {
			var endWall time.Time
			if !end.IsZero() {
				endWall = time.Unix(end.Unix()+int64(off), 0).UTC()
			}
			return time.Unix(cand, 0).In(loc), endWall
		}
		// A gap: the wall time was past the end of the previous period and
		// is before the start of this one.
		if havePrev && !afterStart && wu-int64(prevOff) >= start.Unix() {
			return start, time.Time{}
		}
		if end.IsZero() || end.Unix() > wu+window || !end.After(t) {
			break
		}
		prevOff, havePrev = off, true
		t = end.In(loc)
	}
	// Unreachable for real zone data; fall back to Go's own choice.
	return time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), 0, loc), time.Time{}
}

// NextRun returns the job's next occurrence strictly after `after`: the
// cron schedule's next tick, or run_at for a one-shot whose time has not
// been materialized yet. It is nil when there is none, including for a
// cron schedule that has ended (whether a new schedule may end before it
// starts is ValidateSchedule's question). An error is a stored expression
// that does not parse.
func (j *Job) NextRun(after time.Time) (*time.Time, error) {
	if j.CronExpr != nil {
		t, err := NextOccurrence(*j.CronExpr, j.Location(), after)
		if errors.Is(err, ErrNeverFires) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return &t, nil
	}
	if j.RunAt != nil {
		t := j.RunAt.UTC()
		return &t, nil
	}
	return nil, nil
}
