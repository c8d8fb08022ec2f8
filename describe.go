package chronos

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// No maintained Go module of the approved list describes cron expressions
// in words (lnquy/cron is not on it), so Describe covers the common shapes
// itself and falls back to naming the fields for the rest.

var weekdayNames = [...]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}

var ordinals = [...]string{"", "first", "second", "third", "fourth", "fifth"}

// Describe says in English when the schedule fires, e.g. "At 03:00 every
// day (Europe/Berlin)", with its bounds and exclusions.
func (s *Schedule) Describe() string {
	var b strings.Builder
	if s.spec.every > 0 {
		fmt.Fprintf(&b, "Every %s, counted from %s", s.spec.every, s.anchor.Format(time.RFC3339))
	} else {
		b.WriteString(describeFields(s.spec.segs))
		fmt.Fprintf(&b, " (%s)", s.loc)
	}
	if s.starts != nil {
		fmt.Fprintf(&b, ", from %s", s.starts.In(s.loc).Format(time.RFC3339))
	}
	if s.ends != nil {
		fmt.Fprintf(&b, ", until %s", s.ends.In(s.loc).Format(time.RFC3339))
	}
	if n := len(s.exclude); n == 1 {
		b.WriteString(", except 1 excluded date range")
	} else if n > 1 {
		fmt.Fprintf(&b, ", except %d excluded date ranges", n)
	}
	if len(s.cals) > 0 {
		if s.policy == CalendarNextBusinessDay {
			fmt.Fprintf(&b, "; on a date of %s, on the next business day", calendarNames(s.cals))
		} else {
			fmt.Fprintf(&b, ", except on the dates of %s", calendarNames(s.cals))
		}
	}
	return b.String()
}

func describeFields(f []string) string {
	sec, min, hour, dom, month, dow, year := f[0], f[1], f[2], f[3], f[4], f[5], f[6]
	out := describeTime(sec, min, hour)
	out += describeDays(dom, dow)
	if month != "*" && month != "?" {
		out += " in " + describeList(month, func(v int) string {
			if v >= 1 && v <= 12 {
				return time.Month(v).String()
			}
			return strconv.Itoa(v)
		})
	}
	if year != "*" {
		out += " in " + describeList(year, strconv.Itoa)
	}
	return out
}

func isNum(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

func isNumList(s string) bool {
	for _, p := range strings.Split(s, ",") {
		if !isNum(p) {
			return false
		}
	}
	return true
}

// stepOf returns n for "*/n" (and "0/n").
func stepOf(s string) (int, bool) {
	base, step, ok := strings.Cut(s, "/")
	if !ok || (base != "*" && base != "0") {
		return 0, false
	}
	n, err := strconv.Atoi(step)
	return n, err == nil
}

func plural(n int, unit string) string {
	if n == 1 {
		return unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

func describeTime(sec, min, hour string) string {
	atom := func(v string) int { n, _ := strconv.Atoi(v); return n }
	switch {
	case sec == "*" && min == "*" && hour == "*":
		return "Every second"
	case sec != "0" && min == "*" && hour == "*":
		if n, ok := stepOf(sec); ok {
			return "Every " + plural(n, "second")
		}
	case sec == "0" && min == "*" && hour == "*":
		return "Every minute"
	case sec == "0" && hour == "*":
		if n, ok := stepOf(min); ok {
			return "Every " + plural(n, "minute")
		}
		if isNumList(min) {
			return "At minute " + min + " past every hour"
		}
	case sec == "0" && isNumList(min):
		if n, ok := stepOf(hour); ok {
			return "At minute " + min + " past every " + plural(n, "hour")
		}
	}
	if isNum(sec) && isNumList(min) && isNumList(hour) {
		var times []string
		for _, h := range strings.Split(hour, ",") {
			for _, m := range strings.Split(min, ",") {
				t := fmt.Sprintf("%02d:%02d", atom(h), atom(m))
				if sec != "0" {
					t += fmt.Sprintf(":%02d", atom(sec))
				}
				times = append(times, t)
			}
		}
		if len(times) <= 6 {
			return "At " + strings.Join(times, ", ")
		}
	}
	out := "At minute " + min + " of hour " + hour
	if sec != "0" {
		out = "At second " + sec + ", minute " + min + " of hour " + hour
	}
	return out
}

func describeDays(dom, dow string) string {
	anyDom, anyDow := dom == "*" || dom == "?", dow == "*" || dow == "?"
	switch {
	case anyDom && anyDow:
		return " every day"
	case anyDow:
		return " on " + describeDom(dom)
	case anyDom:
		return " on " + describeDow(dow)
	}
	return " on " + describeDom(dom) + " or " + describeDow(dow)
}

func describeDom(dom string) string {
	switch {
	case dom == "L":
		return "the last day of the month"
	case dom == "LW":
		return "the last weekday of the month"
	case strings.HasPrefix(dom, "L-"):
		return plural(atoiOr(dom[2:]), "day") + " before the last day of the month"
	case strings.HasSuffix(dom, "W") && isNum(dom[:len(dom)-1]):
		return "the weekday nearest day " + dom[:len(dom)-1] + " of the month"
	}
	if n, ok := stepOf(dom); ok {
		return "every " + plural(n, "day")
	}
	return "day " + describeList(dom, strconv.Itoa) + " of the month"
}

func describeDow(dow string) string {
	name := func(v int) string {
		if v >= 0 && v <= 7 {
			return weekdayNames[v]
		}
		return strconv.Itoa(v)
	}
	if len(dow) == 2 && dow[1] == 'L' {
		return "the last " + name(atoiOr(dow[:1])) + " of the month"
	}
	if d, k, ok := strings.Cut(dow, "#"); ok {
		if n := atoiOr(k); n >= 1 && n <= 5 {
			return "the " + ordinals[n] + " " + name(atoiOr(d)) + " of the month"
		}
	}
	return describeList(dow, name)
}

// describeList writes a list of values and ranges with names, or the
// field as it is when it holds steps.
func describeList(field string, name func(int) string) string {
	var parts []string
	for _, p := range strings.Split(field, ",") {
		lo, hi, isRange := strings.Cut(p, "-")
		switch {
		case isNum(p):
			parts = append(parts, name(atoiOr(p)))
		case isRange && isNum(lo) && isNum(hi):
			parts = append(parts, name(atoiOr(lo))+" through "+name(atoiOr(hi)))
		default:
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ", ")
}

func atoiOr(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// Preview is the answer of the preview endpoints: the next fire times (the
// nominal instants, before jitter) in UTC and in the job's zone, and the
// schedule in words.
type Preview struct {
	FireTimes   []time.Time `json:"fire_times"`
	LocalTimes  []string    `json:"local_times"`
	Description string      `json:"description"`
	// Skipped and Shifted are the occurrences up to the last fire time
	// (or until) that a calendar skipped or moved, with the calendar.
	Skipped []CalendarEffect `json:"skipped,omitempty"`
	Shifted []CalendarEffect `json:"shifted,omitempty"`
}

// Preview returns the job's next n occurrences after `after`, as the
// materializer would create them if the job were enabled (a paused job
// previews what it would do once resumed): the cron schedule's, or a
// one-shot's run_at when it is after `after`.
func (j *Job) Preview(after time.Time, n int) (Preview, error) {
	return j.PreviewUntil(after, time.Time{}, n)
}

// PreviewUntil is Preview bounded by until too (the zero time: no bound):
// the fire times in (after, until], at most n, and the occurrences a
// calendar skipped or moved in that span.
func (j *Job) PreviewUntil(after, until time.Time, n int) (Preview, error) {
	p := Preview{FireTimes: []time.Time{}, LocalTimes: []string{}}
	if j.CronExpr == nil {
		loc := j.Location()
		if j.RunAt == nil {
			return p, nil
		}
		p.Description = "Once at " + j.RunAt.In(loc).Format(time.RFC3339) + " (" + loc.String() + ")"
		if j.RunAt.After(after) && n > 0 && (until.IsZero() || !j.RunAt.After(until)) {
			p.FireTimes = append(p.FireTimes, j.RunAt.UTC())
			p.LocalTimes = append(p.LocalTimes, j.RunAt.In(loc).Format(time.RFC3339))
		}
		return p, nil
	}
	s, err := j.Schedule()
	if err != nil {
		return p, err
	}
	p.Description = s.Describe()
	for t, ok := s.Next(after); ok && len(p.FireTimes) < n && (until.IsZero() || !t.After(until)); t, ok = s.Next(t) {
		p.FireTimes = append(p.FireTimes, t)
	}
	for _, t := range p.FireTimes {
		p.LocalTimes = append(p.LocalTimes, t.In(s.Location()).Format(time.RFC3339))
	}
	switch {
	case !until.IsZero() && len(p.FireTimes) < n:
		p.addCalendarEffects(s, after, until) // every fire time up to until is listed
	case len(p.FireTimes) > 0:
		p.addCalendarEffects(s, after, p.FireTimes[len(p.FireTimes)-1])
	}
	return p, nil
}
