package chronos

import (
	"errors"
	"fmt"
	"math/bits"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/adhocore/gronx"
)

// A cron expression is parsed by gronx (its macros, literal names and field
// layout: 5 fields, a leading seconds field, a trailing year) and matched
// with gronx's own segment checker, so "what is due" means exactly what it
// means in gronx. The search for the next due time is Chronos's own, over a
// zone-free wall clock: gronx.NextTickAfter walks the local clock (so a DST
// gap makes it skip a whole day), gives up after a fixed number of steps on
// rare but valid expressions, and takes tens of milliseconds to give up on
// impossible ones such as "0 0 30 2 *". Here every field becomes a bit set
// and the search is a bounded walk over years, months and days.

// Search bounds. The Gregorian calendar repeats every 400 years, so an
// expression without a due day in 400 due years never fires; times past
// year 9999 cannot be written as RFC 3339.
const (
	cronSearchYears = 400
	cronMaxYear     = 9999
	maxCronLength   = 256
)

// ErrNeverFires is returned for a well-formed expression that has no
// occurrence (e.g. "0 0 30 2 *", or a year that has passed).
var ErrNeverFires = errors.New("cron expression never fires")

// cronSpec is a parsed expression: a bit per due value of each field, plus
// the day rules (L, W, #) that depend on the whole date.
type cronSpec struct {
	sec, min uint64
	hour     uint32
	month    uint16 // bit m for month m (1..12)
	dom      uint32 // bit d for day of month d (1..31)
	dow      uint8  // bit w for weekday w (0 = Sunday .. 6)
	domMods  []dayRule
	dowMods  []dayRule
	domAny   bool // day-of-month is * or ?
	dowAny   bool // weekday is * or ?
	// intersect: gronx (like Vixie cron) ORs a restricted day-of-month with
	// a restricted weekday, except when the weekday is a "*/n" step or the
	// day-of-month starts with "*" (or is "?"): then both must match.
	intersect bool
	years     []yearRange // nil: every year
	lastYear  int
	// repeatHour: the hour field is a wildcard or a step, so the
	// expression fires at each real hour, both passes of a repeated
	// (fall-back) hour included; fixed hours fire once (see schedule.go).
	repeatHour bool
	// every is the interval of "@every <duration>" (then no other field
	// is used): occurrences are anchor + k·every in real time.
	every time.Duration
	// segs are the 7 fields as gronx normalized them (seconds first, names
	// as numbers), for Describe.
	segs []string
}

// dayRule is an L, L-n, LW, W or # offset of the day-of-month or weekday
// field.
type dayRule struct {
	// 'L' n days before the last day (L is L-0), 'w' last weekday (Mon-Fri)
	// of the month (LW), 'W' weekday nearest day n, 'l' last weekday n,
	// '#' k-th weekday n
	kind byte
	n, k int
}

type yearRange struct{ start, end, step int }

var (
	cronPartRe = regexp.MustCompile(`^(\?|(\*|\d{1,4}|\d{1,4}-\d{1,4})(/\d{1,4})?)$`)
	domModRe   = regexp.MustCompile(`^(L|LW|L-(\d{1,2})|(\d{1,2})W)$`)
	dowModRe   = regexp.MustCompile(`^(\d)(L|#(\d))$`)
)

var cronCache = struct {
	sync.Mutex
	m map[string]*cronSpec
}{m: map[string]*cronSpec{}}

// parseCron parses and validates expr, from a small cache: the materializer
// computes the next occurrence of every due job on every tick, and most
// jobs share a handful of expressions.
func parseCron(expr string) (*cronSpec, error) {
	cronCache.Lock()
	c, ok := cronCache.m[expr]
	cronCache.Unlock()
	if ok {
		return c, nil
	}
	c, err := compileCron(expr)
	if err != nil {
		return nil, err
	}
	cronCache.Lock()
	if len(cronCache.m) >= 4096 {
		clear(cronCache.m) // bounded: a flood of distinct expressions only costs re-parsing
	}
	cronCache.m[expr] = c
	cronCache.Unlock()
	return c, nil
}

func compileCron(expr string) (*cronSpec, error) {
	if len(expr) > maxCronLength {
		return nil, fmt.Errorf("cron expression is longer than %d bytes", maxCronLength)
	}
	fields := strings.Fields(expr)
	if len(fields) > 0 && strings.EqualFold(fields[0], "@every") {
		return compileEvery(fields)
	}
	if len(fields) == 1 && strings.EqualFold(fields[0], "@midnight") {
		expr = "0 0 * * *"
	}
	segs, err := gronx.Segments(expr)
	if err != nil {
		return nil, errCronShape
	}
	for len(segs) < 7 {
		segs = append(segs, "*")
	}
	c := &cronSpec{lastYear: cronMaxYear, segs: segs}
	names := [7]string{"second", "minute", "hour", "day-of-month", "month", "weekday", "year"}
	for pos, seg := range segs {
		if err := c.addSegment(pos, seg); err != nil {
			return nil, fmt.Errorf("%s field %q: %w", names[pos], seg, err)
		}
	}
	c.domAny = segs[3] == "*" || segs[3] == "?"
	c.dowAny = segs[5] == "*" || segs[5] == "?"
	c.intersect = strings.HasPrefix(segs[5], "*/") || strings.HasPrefix(segs[3], "*") || segs[3] == "?"
	c.repeatHour = segs[2] == "*" || strings.Contains(segs[2], "/")
	return c, nil
}

// errCronShape says what is supported.
var errCronShape = errors.New("cron expression must have 5 fields (minute hour day month weekday), " +
	"6 with leading seconds, or 7 with a trailing year, or be a macro (@yearly, @monthly, @weekly, @daily, " +
	"@midnight, @hourly) or @every <duration> (e.g. @every 90s)")

// Bounds of an "@every" interval.
const (
	minEvery = time.Second
	maxEvery = 366 * 24 * time.Hour
)

// compileEvery parses "@every <duration>" (Go duration syntax, whole
// seconds, 1s to 8784h).
func compileEvery(fields []string) (*cronSpec, error) {
	if len(fields) != 2 {
		return nil, fmt.Errorf("@every takes one duration, e.g. @every 90s or @every 1h30m")
	}
	d, err := time.ParseDuration(fields[1])
	if err != nil {
		return nil, fmt.Errorf("@every %q: not a duration (e.g. 90s, 15m, 1h30m)", fields[1])
	}
	if d < minEvery || d > maxEvery || d%time.Second != 0 {
		return nil, fmt.Errorf("@every %s: the interval must be whole seconds between %v and %v", fields[1], minEvery, maxEvery)
	}
	return &cronSpec{every: d, lastYear: cronMaxYear}, nil
}

// nextEvery returns the first instant anchor + k·every (k >= 0) strictly
// after `after`.
func (c *cronSpec) nextEvery(anchor, after time.Time) (time.Time, bool) {
	a, step := anchor.Unix(), int64(c.every/time.Second)
	t := a
	if !after.Before(anchor) {
		t = a + ((after.Unix()-a)/step+1)*step
	}
	out := time.Unix(t, 0).UTC()
	return out, out.Year() <= cronMaxYear
}

// fieldRef returns, for a field position and a value, a time whose field has that
// value; gronx's checker only looks at that field for plain offsets.
func fieldRef(pos, v int) time.Time {
	switch pos {
	case 0:
		return time.Date(2023, 1, 1, 0, 0, v, 0, time.UTC)
	case 1:
		return time.Date(2023, 1, 1, 0, v, 0, 0, time.UTC)
	case 2:
		return time.Date(2023, 1, 1, v, 0, 0, 0, time.UTC)
	case 3:
		return time.Date(2023, 1, v, 0, 0, 0, 0, time.UTC)
	case 4:
		return time.Date(2023, time.Month(v), 1, 0, 0, 0, 0, time.UTC)
	case 5:
		return time.Date(2023, 1, 1+v, 0, 0, 0, 0, time.UTC) // 2023-01-01 is a Sunday
	default:
		return time.Date(v, 1, 1, 0, 0, 0, 0, time.UTC)
	}
}

var fieldRange = [7][2]int{{0, 59}, {0, 59}, {0, 23}, {1, 31}, {1, 12}, {0, 6}, {0, 9999}}

func (c *cronSpec) addSegment(pos int, seg string) error {
	if seg == "*" || seg == "?" {
		c.setAll(pos)
		return nil
	}
	for _, part := range strings.Split(seg, ",") {
		if pos == 3 {
			if m := domModRe.FindStringSubmatch(part); m != nil {
				r := dayRule{kind: 'L'}
				switch {
				case m[1] == "LW":
					r = dayRule{kind: 'w'}
				case m[2] != "":
					n, _ := strconv.Atoi(m[2])
					if n < 1 || n > 30 {
						return fmt.Errorf("%q: L-n takes n from 1 to 30", part)
					}
					r = dayRule{kind: 'L', n: n}
				case m[3] != "":
					n, _ := strconv.Atoi(m[3])
					if n < 1 || n > 31 {
						return fmt.Errorf("%q: day must be 1-31", part)
					}
					r = dayRule{kind: 'W', n: n}
				}
				c.domMods = append(c.domMods, r)
				continue
			}
		}
		if pos == 5 {
			if m := dowModRe.FindStringSubmatch(part); m != nil {
				n, _ := strconv.Atoi(m[1])
				if n > 7 {
					return fmt.Errorf("%q: weekday must be 0-7", part)
				}
				r := dayRule{kind: 'l', n: n % 7}
				if m[3] != "" {
					k, _ := strconv.Atoi(m[3])
					if k < 1 || k > 5 {
						return fmt.Errorf("%q: occurrence must be 1-5", part)
					}
					r = dayRule{kind: '#', n: n % 7, k: k}
				}
				c.dowMods = append(c.dowMods, r)
				continue
			}
		}
		if !cronPartRe.MatchString(part) || part == "?" {
			return fmt.Errorf("%q is not a valid value, range or step", part)
		}
		if pos == 6 {
			if err := c.addYears(part); err != nil {
				return err
			}
			continue
		}
		// Plain offsets: let gronx's checker decide, value by value. It also
		// reports out-of-bounds values, which its IsValid can miss in a list.
		chk := &gronx.SegmentChecker{}
		for v := fieldRange[pos][0]; v <= fieldRange[pos][1]; v++ {
			chk.SetRef(fieldRef(pos, v))
			due, err := chk.CheckDue(part, pos)
			if err != nil {
				return fmt.Errorf("%q is out of range %d-%d or has a zero step", part, fieldRange[pos][0], fieldRange[pos][1]+boolInt(pos == 5))
			}
			if due {
				c.set(pos, v)
			}
		}
	}
	return nil
}

// addYears parses a year offset with gronx's meaning of steps: "*/n" and
// "0/n" are the years divisible by n, "a/n" is a, a+n, ... without end.
func (c *cronSpec) addYears(part string) error {
	base, stepStr, hasStep := strings.Cut(part, "/")
	step := 1
	if hasStep {
		step, _ = strconv.Atoi(stepStr)
		if step < 1 {
			return fmt.Errorf("%q: step must be at least 1", part)
		}
	}
	r := yearRange{start: 0, end: cronMaxYear, step: step}
	if base != "*" {
		lo, hi, isRange := strings.Cut(base, "-")
		r.start, _ = strconv.Atoi(lo)
		switch {
		case isRange:
			r.end, _ = strconv.Atoi(hi)
			if r.end < r.start {
				return fmt.Errorf("%q: range is backwards", part)
			}
		case !hasStep:
			r.end = r.start
		}
	}
	c.years = append(c.years, r)
	last := 0
	for _, y := range c.years {
		last = max(last, y.end)
	}
	c.lastYear = last
	return nil
}

func (c *cronSpec) setAll(pos int) {
	for v := fieldRange[pos][0]; v <= fieldRange[pos][1] && pos != 6; v++ {
		c.set(pos, v)
	}
}

func (c *cronSpec) set(pos, v int) {
	switch pos {
	case 0:
		c.sec |= 1 << v
	case 1:
		c.min |= 1 << v
	case 2:
		c.hour |= 1 << v
	case 3:
		c.dom |= 1 << v
	case 4:
		c.month |= 1 << v
	case 5:
		c.dow |= 1 << v
	}
}

func (c *cronSpec) yearDue(y int) bool {
	if c.years == nil {
		return true
	}
	for _, r := range c.years {
		if y >= r.start && y <= r.end && (y-r.start)%r.step == 0 {
			return true
		}
	}
	return false
}

func daysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// dayDue reports whether the date matches the day-of-month and weekday
// fields, combined the way gronx combines them.
func (c *cronSpec) dayDue(y int, m time.Month, d, last int, wd time.Weekday) bool {
	dom := c.dom&(1<<d) != 0
	for _, r := range c.domMods {
		dom = dom || r.match(y, m, d, last, wd)
	}
	if c.dowAny {
		return dom
	}
	dow := c.dow&(1<<wd) != 0
	for _, r := range c.dowMods {
		dow = dow || r.match(y, m, d, last, wd)
	}
	if c.intersect {
		return dom && dow
	}
	return dom || dow
}

func (r dayRule) match(y int, m time.Month, d, last int, wd time.Weekday) bool {
	switch r.kind {
	case 'L':
		return d == last-r.n
	case 'w':
		// The last Monday-to-Friday of the month: the last day, or the
		// Friday before a weekend that ends the month.
		lastWD := time.Weekday((int(wd) + last - d) % 7)
		want := last
		switch lastWD {
		case time.Saturday:
			want = last - 1
		case time.Sunday:
			want = last - 2
		}
		return d == want
	case 'W':
		// The weekday nearest to day n, never crossing the month (gronx's
		// order: n, n-1, n+1, n-2, n+2); a month without day n never matches.
		if r.n > last {
			return false
		}
		for _, off := range [...]int{0, -1, 1, -2, 2} {
			day := r.n + off
			if day < 1 || day > last {
				continue
			}
			w := (int(wd) + day - d + 35) % 7
			if w != 0 && w != 6 {
				return d == day
			}
		}
		return false
	case 'l':
		return int(wd) == r.n && d+7 > last
	default: // '#'
		return int(wd) == r.n && (d-1)/7 == r.k-1
	}
}

func nextBit(b uint64, from int) int {
	if from >= 64 {
		return -1
	}
	b >>= uint(from)
	if b == 0 {
		return -1
	}
	return from + bits.TrailingZeros64(b)
}

// timeOfDay returns the first due time of day at or after h:m:s.
func (c *cronSpec) timeOfDay(h, m, s int) (int, int, int, bool) {
	for hh := nextBit(uint64(c.hour), h); hh >= 0; hh = nextBit(uint64(c.hour), hh+1) {
		if hh != h {
			m, s = 0, 0
		}
		for mm := nextBit(c.min, m); mm >= 0; mm = nextBit(c.min, mm+1) {
			if mm != m {
				s = 0
			}
			if ss := nextBit(c.sec, s); ss >= 0 {
				return hh, mm, ss, true
			}
			s = 0
		}
		h, m, s = -1, 0, 0
	}
	return 0, 0, 0, false
}

// nextWall returns the first due wall-clock time at or after from (a wall
// clock written as a UTC time, whole seconds), or false when there is none
// within the search bounds.
func (c *cronSpec) nextWall(from time.Time) (time.Time, bool) {
	y, mo, d := from.Date()
	h, mi, s := from.Clock()
	dueYears := 0
	for ; y <= c.lastYear && y <= cronMaxYear; y, mo, d, h, mi, s = y+1, 1, 1, 0, 0, 0 {
		if !c.yearDue(y) {
			continue
		}
		if dueYears++; dueYears > cronSearchYears {
			break
		}
		for ; mo <= 12; mo, d, h, mi, s = mo+1, 1, 0, 0, 0 {
			if c.month&(1<<mo) == 0 {
				continue
			}
			last := daysIn(y, mo)
			if c.dowAny && len(c.domMods) == 0 {
				// Only day-of-month bits: jump straight to the next one.
				if next := nextBit(uint64(c.dom), d); next < 0 || next > last {
					continue
				} else if next != d {
					d, h, mi, s = next, 0, 0, 0
				}
			}
			wd := time.Date(y, mo, d, 0, 0, 0, 0, time.UTC).Weekday()
			for ; d <= last; d, h, mi, s, wd = d+1, 0, 0, 0, (wd+1)%7 {
				if !c.dayDue(y, mo, d, last, wd) {
					continue
				}
				if hh, mm, ss, ok := c.timeOfDay(h, mi, s); ok {
					return time.Date(y, mo, d, hh, mm, ss, 0, time.UTC), true
				}
			}
		}
	}
	return time.Time{}, false
}

// matchWall reports whether the wall-clock time t (any zone; its fields are
// read) is due. The fuzz tests check it against gronx.IsDue.
func (c *cronSpec) matchWall(t time.Time) bool {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	return c.yearDue(y) && c.month&(1<<mo) != 0 &&
		c.dayDue(y, mo, d, daysIn(y, mo), t.Weekday()) &&
		c.hour&(1<<h) != 0 && c.min&(1<<mi) != 0 && c.sec&(1<<s) != 0
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
