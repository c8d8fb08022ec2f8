package http

import (
	"github.com/gin-gonic/gin"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/ical"
)

// calendarList is the body of GET /v1/calendars.
type calendarList struct {
	Calendars []*chronos.Calendar `json:"calendars"`
}

func newCalendarList(cs []*chronos.Calendar) calendarList { return calendarList{Calendars: cs} }

// calendarName reads :name of a calendar route, which takes no query
// (the name is checked with the calendar, at PUT).
func calendarName(c *gin.Context) (string, error) {
	_, err := parseQuery(c)
	return c.Param("name"), err
}

// putCalendar is PUT /v1/calendars/{name}: create (201) or replace (200).
// Replacing the dates of a calendar in use re-plans its jobs' runs
// created ahead (sql.DB.PutCalendar).
func (s *Server) putCalendar(c *gin.Context) {
	var r chronos.CalendarSpec
	name, err := withBody(s, c, calendarName, &r, `a JSON object with "dates" or "ical" is required`)
	var cal *chronos.Calendar
	if err == nil {
		cal, err = calendarOf(name, r)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	upsert(s, c, cal, s.db.PutCalendar, func(created bool) {
		if created {
			c.Header("Location", "/v1/calendars/"+name)
		}
		s.calendarChanged("put", name)
	})
}

// calendarChanged tells the tap a calendar was put or deleted (op), as
// limit.changed does for limits.
func (s *Server) calendarChanged(op, name string) {
	s.bus.Publish(chronos.Event{Type: chronos.EventCalendarChanged, Instance: s.cfg.Instance, Op: op, Key: name})
}

// calendarDeleted is calendarChanged for a DELETE (a 409 while a job
// names the calendar, so only a calendar no job uses).
func (s *Server) calendarDeleted(name string) { s.calendarChanged("deleted", name) }

// calendarOf builds the calendar a PUT describes; iCalendar text is
// expanded into its dates here.
func calendarOf(name string, r chronos.CalendarSpec) (*chronos.Calendar, error) {
	cal := &chronos.Calendar{Name: name, Description: r.Description, Dates: []string{}}
	switch {
	case r.Dates != nil && r.ICal != nil:
		return nil, chronos.InvalidFields(map[string]string{"dates": "give dates or ical, not both", "ical": "give dates or ical, not both"})
	case r.ICal != nil:
		ds, err := ical.Dates(*r.ICal)
		if err != nil {
			return nil, invalid("ical", err.Error())
		}
		cal.Dates, cal.ICal = ds, r.ICal
	case r.Dates != nil:
		if *r.Dates != nil {
			cal.Dates = *r.Dates
		}
	default:
		return nil, invalid("dates", "one of dates or ical is required")
	}
	if err := cal.Validate(); err != nil {
		return nil, err
	}
	return cal, nil
}
