package chronos

import (
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
//     America/New_York) follows the traditional cron daemon: an expression
//     whose hour field is a wildcard or a step ("*", "*/2") fires at each
//     real hour, so in both passes of the repeated hour ("30 * * * *": 01:30
//     EDT and 01:30 EST; "*/15 * * * *" every 15 real minutes through the
//     night); one with fixed hours ("30 1 * * *", "0 9-17 * * *") fires
//     once, at the first occurrence (01:30 EDT), and the next occurrence
//     after an instant in the second pass is never a wall time that already
//     fired in the first.
//   - "@every <duration>" is a fixed interval of real time from an anchor
//     (see Schedule); time zones and DST do not apply to it.
//
// Occurrences are always strictly after the reference instant, in whole
// seconds.

// ValidateCronSyntax checks that a cron expression is well-formed: 5
// fields (minute hour day month weekday), an optional leading seconds
// field (6 fields), an optional trailing year (7 fields, or 6 when the
// last is a 4-digit year), the macros (@yearly, @annually, @monthly,
// @weekly, @daily, @midnight, @hourly and gronx's others), names (JAN,
// MON), L, L-n, LW, W, #, and "@every <duration>". It does not ask whether the expression fires (again): a stored
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
	if c.every > 0 {
		return nil // a fixed interval always fires again
	}
	if _, ok := c.nextWall(time.Now().UTC().Truncate(time.Second)); !ok {
		return ErrNeverFires
	}
	return nil
}

// NextOccurrence returns the first occurrence of expr strictly after
// `after`, evaluated on the wall clock of loc (nil is UTC), in UTC, with
// the DST rules above. An invalid expression, or one without a further
// occurrence, is an error. "@every" intervals count from the Unix epoch
// here; a job's are anchored to its creation or starts_at (Schedule).
func NextOccurrence(expr string, loc *time.Location, after time.Time) (time.Time, error) {
	c, err := parseCron(expr)
	if err != nil {
		return time.Time{}, fmt.Errorf("next occurrence of %q: %w", expr, err)
	}
	if loc == nil {
		loc = time.UTC
	}
	if c.every > 0 {
		if t, ok := c.nextEvery(time.Unix(0, 0), after); ok {
			return t, nil
		}
		return time.Time{}, fmt.Errorf("next occurrence of %q: %w", expr, ErrNeverFires)
	}
	t, err := c.nextAfter(loc, after)
	if err != nil {
		return time.Time{}, fmt.Errorf("next occurrence of %q in %s: %w", expr, loc, err)
	}
	return t, nil
}

// nextAfter is the next occurrence after `after` under the DST rules above:
// the first pass of every due wall time, and, for an expression whose hour
// field repeats, the second pass of a repeated stretch too.
func (c *cronSpec) nextAfter(loc *time.Location, after time.Time) (time.Time, error) {
	t, err := c.nextFirstPass(loc, after)
	if err != nil || !c.repeatHour {
		return t, err
	}
	if r, ok := c.nextSecondPass(loc, after, t); ok {
		return r, nil
	}
	return t, nil
}

// nextSecondPass returns the first due wall time in the second pass of a
// repeated (fall-back) stretch whose instant is after `after` and before
// limit, if any. It walks the zone periods from the one holding `after`
// up to limit; a period that starts with a backward transition opens a
// second pass over the wall times [start+off, start+prevOff).
func (c *cronSpec) nextSecondPass(loc *time.Location, after, limit time.Time) (time.Time, bool) {
	p := after.In(loc)
	for range 32 {
		start, end := p.ZoneBounds()
		_, off := p.Zone()
		if !start.IsZero() {
			_, prevOff := start.Add(-time.Second).In(loc).Zone()
			if back := prevOff - off; back > 0 && after.Before(start.Add(time.Duration(back)*time.Second)) {
				from := time.Unix(start.Unix()+int64(off), 0).UTC() // first wall time of the second pass
				if w := wallClock(after.In(loc)).Truncate(time.Second).Add(time.Second); !start.After(after) && w.After(from) {
					from = w
				}
				stop := time.Unix(start.Unix()+int64(prevOff), 0).UTC()
				if w, ok := c.nextWall(from); ok && w.Before(stop) {
					t := time.Unix(w.Unix()-int64(off), 0).UTC()
					if t.After(after) && t.Before(limit) {
						return t, true
					}
				}
			}
		}
		if end.IsZero() || !end.Before(limit) || !end.After(p) {
			return time.Time{}, false
		}
		p = end.In(loc)
	}
	return time.Time{}, false
}

// nextFirstPass is the first occurrence of a due wall time after `after`.
func (c *cronSpec) nextFirstPass(loc *time.Location, after time.Time) (time.Time, error) {
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

// NextRun returns the job's next occurrence strictly after `after`: its
// Schedule's next (time zone, DST, starts_at/ends_at and exclusions
// applied), or run_at for a one-shot whose time has not been materialized
// yet. It is nil when there is none, including for a cron schedule that
// has ended or is past its ends_at (the job is finished; whether a new
// schedule may end before it starts is ValidateSchedule's question). An
// error is a stored schedule that does not build.
func (j *Job) NextRun(after time.Time) (*time.Time, error) {
	if j.CronExpr != nil {
		s, err := j.Schedule()
		if err != nil {
			return nil, err
		}
		t, ok := s.Next(after)
		if !ok {
			return nil, nil
		}
		return &t, nil
	}
	if j.RunAt != nil {
		t := j.RunAt.UTC()
		return &t, nil
	}
	return nil, nil
}

// validateWindow is ValidateSchedule's question for the policy fields: a
// cron job whose expression fires again but whose ends_at or exclusions
// leave it no occurrence after now is an EINVALID naming that field.
func (j *Job) validateWindow(now time.Time) error {
	if j.CronExpr == nil {
		return nil
	}
	if next, err := j.NextRun(now); err != nil || next != nil {
		return err
	}
	if j.EndsAt != nil {
		return InvalidFields(map[string]string{"ends_at": "the schedule has no occurrence before ends_at"})
	}
	if len(j.Exclude) > 0 {
		return InvalidFields(map[string]string{"exclude": "every further occurrence is excluded"})
	}
	return nil
}
