package client

import (
	"encoding/json"

	"github.com/chronoshq/chronos"
)

// calendarKind: an item with "kind: Calendar" is a calendar (PUT
// /v1/calendars/{name}): name, description, and dates or ical, exactly
// one. Dates are checked and normalised here, ical is parsed by the
// server. See apply_objects.go for what apply does with it.
var calendarKind = newKind(objectKind{kind: "Calendar", noun: "calendar", plural: "calendars", name: "name",
	fields: []string{"description", "dates", "ical"}},
	checkCalendar, (*Client).ListCalendars, calendarSpecOf, (*Client).PutCalendar, (*Client).DeleteCalendar)

// checkCalendar checks one calendar of a manifest: its name, and exactly
// one of dates (valid dates) or ical.
func checkCalendar(name string, raw json.RawMessage) (CalendarSpec, map[string]string) {
	var d struct {
		Description string    `json:"description"`
		Dates       *[]string `json:"dates"`
		ICal        *string   `json:"ical"`
	}
	if bad := decodeFields(raw, &d, "name"); bad != nil {
		return CalendarSpec{}, bad
	}
	bad := map[string]string{}
	if err := chronos.ValidateCalendarName(name); err != nil {
		bad["name"] = err.Error()
	}
	switch {
	case d.Dates != nil && d.ICal != nil:
		bad["dates"] = "give dates or ical, not both"
	case d.Dates == nil && d.ICal == nil:
		bad["dates"] = "one of dates or ical is required"
	case d.Dates != nil:
		ds, err := chronos.NormalizeDates(*d.Dates)
		if err != nil {
			bad["dates"] = err.Error()
		}
		d.Dates = &ds
	}
	return CalendarSpec{Description: d.Description, Dates: d.Dates, ICal: d.ICal}, bad
}

// calendarSpecOf is a server's calendar as the body that would set it:
// an iCalendar one by its text (its dates are derived from it).
func calendarSpecOf(cal *chronos.Calendar) (string, CalendarSpec) {
	s := CalendarSpec{Description: cal.Description, ICal: cal.ICal}
	if cal.ICal == nil {
		s.Dates = &cal.Dates
	}
	return cal.Name, s
}
