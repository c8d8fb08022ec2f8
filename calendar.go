package chronos

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Calendar is a named set of dates (holidays, closures) that cron jobs
// name in their calendars field: an occurrence whose local date, in the
// job's time zone, is on one of them does not run as scheduled (see
// CalendarPolicy). A calendar is given either as a list of dates or as
// iCalendar text (RFC 5545: all-day VEVENTs, with RRULE for recurring
// holidays), which the ical package expands into dates; Dates is then
// the expansion, through MaxCalendarYear.
type Calendar struct {
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Dates       []string  `json:"dates"`          // YYYY-MM-DD, sorted, distinct
	ICal        *string   `json:"ical,omitempty"` // the source, when given as iCalendar
	Jobs        int       `json:"jobs"`           // jobs naming it (read only)
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// CalendarSpec is the body of PUT /v1/calendars/{name}: a description
// and Dates or ICal, exactly one.
type CalendarSpec struct {
	Description string    `json:"description,omitempty"`
	Dates       *[]string `json:"dates,omitempty"`
	ICal        *string   `json:"ical,omitempty"`
}

// CalendarPolicy says what a cron job does with an occurrence on one of
// its calendars' dates.
type CalendarPolicy string

// Calendar policies.
const (
	// CalendarSkip: the occurrence does not run; it is counted as skipped
	// with reason SkipCalendar.
	CalendarSkip CalendarPolicy = "skip"
	// CalendarNextBusinessDay: the occurrence runs at the same local time
	// on the next day that is neither on one of the job's calendars nor a
	// Saturday or Sunday: one run for the original occurrence (if that
	// instant is an occurrence of its own too, one run stands for both).
	CalendarNextBusinessDay CalendarPolicy = "next_business_day"
)

// Valid reports whether p is a known policy.
func (p CalendarPolicy) Valid() bool { return p == CalendarSkip || p == CalendarNextBusinessDay }

// Limits of calendars.
const (
	MaxCalendarNameLength = 63
	MaxCalendarDates      = 10000 // dates of one calendar, after expansion
	MaxJobCalendars       = 10    // calendars one job names
	MaxCalendarICalBytes  = 1 << 20
	// MaxCalendarYear is the last year recurring iCalendar events are
	// expanded through (a calendar is a finite set of dates).
	MaxCalendarYear = 2100
	// MaxBusinessDayShift bounds how far next_business_day looks for a
	// business day; an occurrence with none within it is skipped.
	MaxBusinessDayShift = 366
)

var calendarNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$`)

// ValidateCalendarName checks a calendar's name: lower-case letters,
// digits, '-', '_' and '.', starting and ending with a letter or digit, at
// most MaxCalendarNameLength bytes (it goes in URLs and manifests).
func ValidateCalendarName(name string) error {
	if len(name) == 0 || len(name) > MaxCalendarNameLength || !calendarNameRE.MatchString(name) {
		return fmt.Errorf("%q must be 1 to %d lower-case letters, digits, '-', '_' or '.', starting and ending with a letter or digit", name, MaxCalendarNameLength)
	}
	return nil
}

// NormalizeDates checks a list of dates (YYYY-MM-DD, years 1 to
// MaxYear) and returns them sorted and without duplicates. Its error
// names the first bad entry.
func NormalizeDates(dates []string) ([]string, error) {
	if len(dates) > MaxCalendarDates {
		return nil, fmt.Errorf("at most %d dates", MaxCalendarDates)
	}
	out := make([]string, 0, len(dates))
	for i, d := range dates {
		t, err := time.Parse(dateLayout, d)
		if err != nil || t.Format(dateLayout) != d {
			return nil, fmt.Errorf("entry %d: %q must be a date, YYYY-MM-DD", i, d)
		}
		out = append(out, d)
	}
	slices.Sort(out) // YYYY-MM-DD sorts as dates do
	return slices.Compact(out), nil
}

// Validate checks a calendar given as dates (ICal nil) after
// NormalizeDates, or one whose ICal was expanded into Dates, and returns
// an EINVALID naming each bad field.
func (c *Calendar) Validate() error {
	f := map[string]string{}
	if err := ValidateCalendarName(c.Name); err != nil {
		f["name"] = err.Error()
	}
	if len(c.Description) > MaxDescriptionLength {
		f["description"] = fmt.Sprintf("must be at most %d bytes", MaxDescriptionLength)
	}
	if ds, err := NormalizeDates(c.Dates); err != nil {
		f["dates"] = err.Error()
	} else {
		c.Dates = ds
	}
	if len(f) > 0 {
		return InvalidFields(f)
	}
	return nil
}

// CalendarDays is a calendar compiled for lookups: the set of its dates.
// It is immutable, so schedules of many jobs may share one.
type CalendarDays struct {
	Name string
	days map[int32]struct{}
}

// NewCalendarDays compiles a calendar's dates. Entries that are not
// dates are ignored (stored calendars were validated).
func NewCalendarDays(name string, dates []string) *CalendarDays {
	c := &CalendarDays{Name: name, days: make(map[int32]struct{}, len(dates))}
	for _, d := range dates {
		if t, err := time.Parse(dateLayout, d); err == nil {
			c.days[dayNumber(t.Date())] = struct{}{}
		}
	}
	return c
}

// Len is the number of dates.
func (c *CalendarDays) Len() int { return len(c.days) }

// Has reports whether the civil date y-m-d is on the calendar.
func (c *CalendarDays) Has(y int, m time.Month, d int) bool {
	_, ok := c.days[dayNumber(y, m, d)]
	return ok
}

// dayNumber is the civil date's days since 1970-01-01 (proleptic
// Gregorian), without building a time.Time: days_from_civil (H. Hinnant).
func dayNumber(y int, m time.Month, d int) int32 {
	mm := int(m)
	if mm <= 2 {
		y--
	}
	era := y
	if era < 0 {
		era -= 399
	}
	era /= 400
	yoe := y - era*400
	mp := (mm + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int32(era*146097 + doe - 719468)
}

// validateCalendars checks a job's calendars and calendar_policy into f.
func (j *Job) validateCalendars(f map[string]string) {
	if !j.CalendarPolicy.Valid() {
		f["calendar_policy"] = "must be skip or next_business_day"
	}
	if len(j.Calendars) == 0 {
		return
	}
	if j.CronExpr == nil {
		f["calendars"] = "applies to cron jobs only"
		return
	}
	if len(j.Calendars) > MaxJobCalendars {
		f["calendars"] = fmt.Sprintf("at most %d calendars", MaxJobCalendars)
		return
	}
	seen := map[string]bool{}
	for _, n := range j.Calendars {
		if err := ValidateCalendarName(n); err != nil {
			f["calendars"] = err.Error()
			return
		}
		if seen[n] {
			f["calendars"] = fmt.Sprintf("%q is named twice", n)
			return
		}
		seen[n] = true
	}
}

// normalizeCalendars fills the calendar fields' defaults: no calendars,
// policy skip (the policy of a job without calendars is always skip, so
// that removing the calendars leaves nothing behind).
func (j *Job) normalizeCalendars() {
	if j.Calendars == nil {
		j.Calendars = []string{}
	}
	if j.CalendarPolicy == "" || len(j.Calendars) == 0 {
		j.CalendarPolicy = CalendarSkip
	}
}

// ResolveCalendars attaches the compiled calendars the job names, from
// byName, in the order it names them, so that its Schedule applies them.
// A name missing from byName is an EINVALID naming calendars: the API's
// answer to a job that names a calendar that does not exist.
func (j *Job) ResolveCalendars(byName map[string]*CalendarDays) error {
	j.calendarDays = nil
	for _, n := range j.Calendars {
		c, ok := byName[n]
		if !ok {
			return InvalidFields(map[string]string{"calendars": fmt.Sprintf("calendar %q does not exist", n)})
		}
		j.calendarDays = append(j.calendarDays, c)
	}
	j.calendarsResolved = true
	return nil
}

// CalendarsResolved reports whether the job's calendars were attached
// (ResolveCalendars), or it names none: only then does its Schedule apply
// them.
func (j *Job) CalendarsResolved() bool { return len(j.Calendars) == 0 || j.calendarsResolved }

// calendarNames joins names for messages.
func calendarNames(cs []*CalendarDays) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

// applyCalendars applies a PATCH's calendars and calendar_policy; null
// clears them (no calendars; policy skip).
func (u *JobUpdate) applyCalendars(j *Job) {
	if u.Calendars.Set {
		j.calendarDays, j.calendarsResolved = nil, false // resolved again by the store
		j.Calendars = []string{}
		if !u.Calendars.Null && u.Calendars.Value != nil {
			j.Calendars = u.Calendars.Value
		}
	}
	if u.CalendarPolicy.Set {
		j.CalendarPolicy = CalendarSkip
		if !u.CalendarPolicy.Null {
			j.CalendarPolicy = u.CalendarPolicy.Value
		}
	}
	j.normalizeCalendars()
}
