package client

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/chronoshq/chronos"
)

// Calendars in manifests: an item whose "kind" is "Calendar" describes a
// calendar (PUT /v1/calendars/{name}): name, description, and dates or
// ical. Apply creates and replaces them before the jobs (which name them)
// and, with --prune, deletes the calendars the files do not list after
// the jobs, but only when the files hold at least one calendar: a
// manifest of jobs alone leaves the calendars as they are. A calendar a
// job still names cannot be deleted (the server's 409).

// CalendarDoc is one calendar of a manifest.
type CalendarDoc struct {
	Name   string
	Source string // file, and position in it
	Spec   CalendarSpec
}

// CalendarStep is one write of a calendar in a plan.
type CalendarStep struct {
	Action  Action   `json:"action"`
	Name    string   `json:"name"`
	Changes []string `json:"changes,omitempty"` // fields that differ: description, dates, ical
	doc     *CalendarDoc
}

// kindOf reads an item's "kind" ("" when absent or not a string).
func kindOf(raw json.RawMessage) string {
	var k struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(raw, &k)
	return k.Kind
}

// splitCalendars separates the calendars (kind: Calendar) from the jobs,
// and drops "kind: Job" from jobs (a job has no kind field).
func splitCalendars(raws []json.RawMessage) (jobs, cals []json.RawMessage) {
	for _, raw := range raws {
		switch kindOf(raw) {
		case "Calendar":
			cals = append(cals, raw)
		case "Job":
			var m map[string]json.RawMessage
			if json.Unmarshal(raw, &m) == nil {
				delete(m, "kind")
				raw, _ = json.Marshal(m)
			}
			jobs = append(jobs, raw)
		default:
			jobs = append(jobs, raw)
		}
	}
	return jobs, cals
}

// checkCalendar checks one calendar of a manifest: its name, and exactly
// one of dates (valid dates) or ical (parsed by the server).
func checkCalendar(raw json.RawMessage, where string) (*CalendarDoc, []string) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, []string{where + ": a calendar must be a mapping of fields"}
	}
	var problems []string
	for k := range fields {
		switch k {
		case "kind", "name", "description", "dates", "ical":
		default:
			problems = append(problems, fmt.Sprintf("%s: field %s: unknown field", where, k))
		}
	}
	var d struct {
		Name        string    `json:"name"`
		Description string    `json:"description"`
		Dates       *[]string `json:"dates"`
		ICal        *string   `json:"ical"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, append(problems, fmt.Sprintf("%s: %v", where, err))
	}
	if d.Name != "" {
		where = fmt.Sprintf("%s (%s)", where, d.Name)
	}
	if err := chronos.ValidateCalendarName(d.Name); err != nil {
		problems = append(problems, fmt.Sprintf("%s: field name: %v", where, err))
	}
	switch {
	case d.Dates != nil && d.ICal != nil:
		problems = append(problems, where+": field dates: give dates or ical, not both")
	case d.Dates == nil && d.ICal == nil:
		problems = append(problems, where+": field dates: one of dates or ical is required")
	case d.Dates != nil:
		ds, err := chronos.NormalizeDates(*d.Dates)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: field dates: %v", where, err))
		}
		d.Dates = &ds
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return &CalendarDoc{Name: d.Name, Source: where, Spec: CalendarSpec{Description: d.Description, Dates: d.Dates, ICal: d.ICal}}, nil
}

// PlanCalendars compares the manifest's calendars with the server's; with
// prune (and at least one calendar in the manifest) the server's
// calendars the manifest does not name are deleted. It returns the steps
// and how many calendars are unchanged.
func (c *Client) PlanCalendars(ctx context.Context, docs []*CalendarDoc, prune bool) ([]CalendarStep, int, error) {
	if len(docs) == 0 {
		return nil, 0, nil
	}
	existing, err := c.ListCalendars(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("list calendars: %w", err)
	}
	byName := map[string]*chronos.Calendar{}
	for _, cal := range existing {
		byName[cal.Name] = cal
	}
	var steps []CalendarStep
	unchanged := 0
	named := map[string]bool{}
	for _, d := range docs {
		named[d.Name] = true
		cur, ok := byName[d.Name]
		if !ok {
			steps = append(steps, CalendarStep{Action: ActionCreate, Name: d.Name, doc: d})
			continue
		}
		var changes []string
		if cur.Description != d.Spec.Description {
			changes = append(changes, "description")
		}
		switch {
		case d.Spec.ICal != nil:
			if cur.ICal == nil || *cur.ICal != *d.Spec.ICal {
				changes = append(changes, "ical")
			}
		case cur.ICal != nil || !slices.Equal(cur.Dates, *d.Spec.Dates):
			changes = append(changes, "dates")
		}
		if len(changes) == 0 {
			unchanged++
			continue
		}
		steps = append(steps, CalendarStep{Action: ActionUpdate, Name: d.Name, Changes: changes, doc: d})
	}
	if prune {
		for _, cal := range existing {
			if !named[cal.Name] {
				steps = append(steps, CalendarStep{Action: ActionDelete, Name: cal.Name})
			}
		}
	}
	return steps, unchanged, nil
}

// applyCalendars carries out the calendar steps of one kind: the creates
// and updates (deletes false), or the deletes. It returns how many
// succeeded.
func (c *Client) applyCalendars(ctx context.Context, steps []CalendarStep, deletes bool) (int, error) {
	n := 0
	var errs []string
	for _, st := range steps {
		if (st.Action == ActionDelete) != deletes {
			continue
		}
		var err error
		if st.Action == ActionDelete {
			err = c.DeleteCalendar(ctx, st.Name)
		} else {
			_, err = c.PutCalendar(ctx, st.Name, st.doc.Spec)
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s calendar %s: %v", st.Action, st.Name, err))
			continue
		}
		n++
	}
	if len(errs) > 0 {
		return n, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return n, nil
}

// calendarLines writes the calendar steps as Plan.String does jobs.
func calendarLines(b *strings.Builder, steps []CalendarStep) {
	for _, st := range steps {
		switch st.Action {
		case ActionCreate:
			fmt.Fprintf(b, "+ create calendar %s\n", st.Name)
		case ActionDelete:
			fmt.Fprintf(b, "- delete calendar %s\n", st.Name)
		case ActionUpdate:
			fmt.Fprintf(b, "~ update calendar %s (%s)\n", st.Name, strings.Join(st.Changes, ", "))
		}
	}
}
