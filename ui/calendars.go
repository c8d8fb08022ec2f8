package ui

import (
	"fmt"
	nethttp "net/http"
	"sort"
	"strings"
	"time"

	"github.com/chronoshq/chronos"
)

// The calendars page: GET /ui/calendars lists the holiday calendars (as
// GET /v1/calendars) and, for a write key, holds the form that creates or
// replaces one (POST /ui/calendars, as PUT /v1/calendars/{name} with
// dates) and a delete button per calendar (POST
// /ui/calendars/{name}/delete, as DELETE /v1/calendars/{name}). Both
// write through the sql.DB methods the API calls, so the validation, the
// re-planning of the jobs naming a calendar and the 409 of one in use are
// the API's, and both publish the API's calendar.changed on the bus.

// upcomingDates is how many of a calendar's next dates its row shows.
const upcomingDates = 5

// calendarsPath is the calendars page, where its actions send the browser
// back.
const calendarsPath = Prefix + "calendars"

// calendarRow is one line of the calendars page.
type calendarRow struct {
	*chronos.Calendar
	Upcoming []string // the next dates, from today (UTC) on
	Later    int      // upcoming dates beyond those
}

// calendarForm is the create-or-replace form as typed, so that a refused
// save comes back as it was sent.
type calendarForm struct {
	Name, Description, Dates string
	fill                     bool // show the stored description and dates of Name (?edit=)
}

// calendarRows adds each calendar's next dates from today on, a date in
// UTC (YYYY-MM-DD): a calendar's dates are a job's local dates, so no one
// zone is right, and UTC is the console's zone when no job is in view.
func calendarRows(cs []*chronos.Calendar, today string) []calendarRow {
	out := make([]calendarRow, len(cs))
	for i, c := range cs {
		// Dates come sorted from the database, and YYYY-MM-DD sorts as
		// dates do: a binary search, as a calendar may hold thousands.
		next := c.Dates[sort.SearchStrings(c.Dates, today):]
		n := min(len(next), upcomingDates)
		out[i] = calendarRow{Calendar: c, Upcoming: next[:n], Later: len(next) - n}
	}
	return out
}

// calendarsPage is GET /ui/calendars; ?edit=NAME fills the form with that
// calendar, to replace it (a calendar given as iCalendar is not offered:
// the form would turn its rules into their dates).
func (c *Console) calendarsPage(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	var f calendarForm
	if name := r.URL.Query().Get("edit"); name != "" && s.CanWrite() {
		f = calendarForm{Name: name, fill: true}
	}
	c.showCalendars(w, r, s, nethttp.StatusOK, f, nil)
}

// showCalendars renders the page with status code: the list, the form as
// f holds it, and err's message, a 4xx the person can act on.
func (c *Console) showCalendars(w nethttp.ResponseWriter, r *nethttp.Request, s *session, code int, f calendarForm, err error) {
	cs, lerr := c.db.Calendars(r.Context())
	if lerr != nil {
		c.failErr(w, r, s, lerr)
		return
	}
	if f.fill {
		for _, cal := range cs {
			if cal.Name == f.Name && cal.ICal == nil {
				f.Description, f.Dates = cal.Description, strings.Join(cal.Dates, "\n")
			}
		}
	}
	d := map[string]any{"Rows": calendarRows(cs, time.Now().UTC().Format(time.DateOnly)), "Form": f,
		"MaxName": chronos.MaxCalendarNameLength, "MaxDescription": chronos.MaxDescriptionLength, "MaxYear": chronos.MaxCalendarYear}
	d["Fields"], d["Other"] = splitFieldErrors(err, []string{"name", "description", "dates"})
	if err != nil {
		d["Error"] = chronos.ErrorMessage(err)
	}
	c.render(w, r, s, code, "calendars", "Calendars", d)
}

// splitDates reads the dates field: one date a line or apart by commas,
// blanks ignored. The dates are checked by the calendar's validation, so
// that the form refuses exactly what the API refuses.
func splitDates(s string) []string {
	out := []string{}
	for _, d := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '\n' || r == '\r' }) {
		if d = strings.TrimSpace(d); d != "" {
			out = append(out, d)
		}
	}
	return out
}

// putCalendar is POST /ui/calendars: create or replace the calendar the
// form names, with its dates.
func (c *Console) putCalendar(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	f := calendarForm{Name: strings.TrimSpace(r.PostForm.Get("name")), Description: r.PostForm.Get("description"),
		Dates: r.PostForm.Get("dates")}
	cal := &chronos.Calendar{Name: f.Name, Description: f.Description, Dates: splitDates(f.Dates)}
	created, err := c.db.PutCalendar(r.Context(), cal)
	if err != nil {
		if statusOf(err) != nethttp.StatusBadRequest {
			c.failErr(w, r, s, fmt.Errorf("put calendar %q: %w", f.Name, err))
			return
		}
		c.showCalendars(w, r, s, nethttp.StatusBadRequest, f, err)
		return
	}
	c.calendarChanged("put", cal.Name)
	c.log.Info("console: calendar put", "calendar", cal.Name, "dates", len(cal.Dates), "created", created, "key", s.Name)
	done := "calendar-saved"
	if created {
		done = "calendar-created"
	}
	c.redirectDone(w, r, calendarsPath, done)
}

// deleteCalendar is POST /ui/calendars/{name}/delete. A calendar a job
// names is refused (409) with the names of the jobs, on the page, so the
// person sees which to change.
func (c *Console) deleteCalendar(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	name := r.PathValue("name")
	if err := c.db.DeleteCalendar(r.Context(), name); err != nil {
		code := statusOf(err)
		if code == nethttp.StatusInternalServerError {
			c.failErr(w, r, s, fmt.Errorf("delete calendar %q: %w", name, err))
			return
		}
		c.showCalendars(w, r, s, code, calendarForm{}, err)
		return
	}
	c.calendarChanged("deleted", name)
	c.log.Info("console: calendar deleted", "calendar", name, "key", s.Name)
	c.redirectDone(w, r, calendarsPath, "calendar-deleted")
}

// calendarChanged publishes what the API's PUT and DELETE of a calendar
// publish, so the live tap shows a change made here as one made through
// the API.
func (c *Console) calendarChanged(op, name string) {
	c.bus.Publish(chronos.Event{Type: chronos.EventCalendarChanged, Instance: c.cfg.Instance, Op: op, Key: name})
}
