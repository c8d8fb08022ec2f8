package http

import (
	nethttp "net/http"

	"github.com/gin-gonic/gin"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/ical"
)

// calendarRequest is the body of PUT /v1/calendars/{name}: dates or
// iCalendar text, exactly one of them.
type calendarRequest struct {
	Description string    `json:"description"`
	Dates       *[]string `json:"dates"`
	ICal        *string   `json:"ical"`
}

// calendarList is the body of GET /v1/calendars.
type calendarList struct {
	Calendars []*chronos.Calendar `json:"calendars"`
}

// putCalendar is PUT /v1/calendars/{name}: create (201) or replace (200).
// Replacing the dates of a calendar in use re-plans its jobs' runs
// created ahead (sql.DB.PutCalendar).
func (s *Server) putCalendar(c *gin.Context) {
	name := c.Param("name")
	if _, err := parseQuery(c); err != nil {
		s.fail(c, err)
		return
	}
	body, err := s.readBody(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	if len(trimSpace(body)) == 0 {
		s.fail(c, invalid("body", `a JSON object with "dates" or "ical" is required`))
		return
	}
	var r calendarRequest
	if _, err := decodeObject(body, &r); err != nil {
		s.fail(c, err)
		return
	}
	cal, err := calendarOf(name, r)
	if err != nil {
		s.fail(c, err)
		return
	}
	created, err := s.db.PutCalendar(c.Request.Context(), cal)
	if err != nil {
		s.fail(c, err)
		return
	}
	status := nethttp.StatusOK
	if created {
		status = nethttp.StatusCreated
		c.Header("Location", "/v1/calendars/"+name)
	}
	s.reply(c, status, cal)
}

// calendarOf builds the calendar a PUT describes; iCalendar text is
// expanded into its dates here.
func calendarOf(name string, r calendarRequest) (*chronos.Calendar, error) {
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

// getCalendar is GET /v1/calendars/{name}.
func (s *Server) getCalendar(c *gin.Context) {
	if _, err := parseQuery(c); err != nil {
		s.fail(c, err)
		return
	}
	cal, err := s.db.Calendar(c.Request.Context(), c.Param("name"))
	if err != nil {
		s.fail(c, err)
		return
	}
	s.reply(c, nethttp.StatusOK, cal)
}

// listCalendars is GET /v1/calendars.
func (s *Server) listCalendars(c *gin.Context) {
	if _, err := parseQuery(c); err != nil {
		s.fail(c, err)
		return
	}
	cs, err := s.db.Calendars(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	if cs == nil {
		cs = []*chronos.Calendar{}
	}
	s.reply(c, nethttp.StatusOK, calendarList{Calendars: cs})
}

// deleteCalendar is DELETE /v1/calendars/{name}: 204, or 409 while a job
// names it.
func (s *Server) deleteCalendar(c *gin.Context) {
	if _, err := parseQuery(c); err != nil {
		s.fail(c, err)
		return
	}
	if err := s.db.DeleteCalendar(c.Request.Context(), c.Param("name")); err != nil {
		s.fail(c, err)
		return
	}
	c.Status(nethttp.StatusNoContent)
}
