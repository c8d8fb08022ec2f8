package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/chronoshq/chronos"
)

// CalendarSpec is what PutCalendar sets (the API's body, one type with
// the server's).
type CalendarSpec = chronos.CalendarSpec

func calendarPath(name string) string { return "/v1/calendars/" + url.PathEscape(name) }

// ListCalendars returns every calendar, by name.
func (c *Client) ListCalendars(ctx context.Context) ([]*chronos.Calendar, error) {
	return listIn[*chronos.Calendar](ctx, c, "/v1/calendars", "calendars")
}

// GetCalendar returns one calendar.
func (c *Client) GetCalendar(ctx context.Context, name string) (*chronos.Calendar, error) {
	return call[chronos.Calendar](ctx, c, request{method: http.MethodGet, path: calendarPath(name)})
}

// PutCalendar creates or replaces a calendar. Replacing the dates of one
// that jobs name re-plans their runs created ahead.
func (c *Client) PutCalendar(ctx context.Context, name string, spec CalendarSpec) (*chronos.Calendar, error) {
	return call[chronos.Calendar](ctx, c, request{method: http.MethodPut, path: calendarPath(name), body: spec})
}

// DeleteCalendar deletes a calendar; a conflict (409) while a job names it.
func (c *Client) DeleteCalendar(ctx context.Context, name string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: calendarPath(name)}, nil)
}
