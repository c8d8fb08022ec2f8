package ui

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// anyStatus is the run list's status choice for runs of every status: the
// list's default is the dead-letter queue (status dead), so "no status"
// needs a name of its own.
const anyStatus = "any"

// runFilter is the run list's filters as typed, so the form shows them
// back exactly; Query is what they ask of sql.AllRuns, the function behind
// GET /v1/runs, with the same fields: status, job_id, trigger, and since
// and until on created_at (since inclusive, until exclusive).
type runFilter struct {
	Status, JobID, Trigger, Since, Until string
	Query                                sql.RunQuery
}

// Dead reports whether the filter lists dead runs only: the runs a
// redrive takes.
func (f runFilter) Dead() bool { return f.Query.Status == chronos.StatusDead }

// Values are the filters as query parameters (no cursor), for the links
// and hidden fields that keep them.
func (f runFilter) Values() url.Values {
	return setNonEmpty(url.Values{"status": {f.Status}},
		map[string]string{"job_id": f.JobID, "trigger": f.Trigger, "since": f.Since, "until": f.Until})
}

// parseRunFilter reads the filters from a query string or a posted form.
// The status defaults to dead. Times are UTC, as a datetime-local input
// sends them (seconds optional) or RFC 3339. A filter that does not parse
// is an EINVALID naming it, as GET /v1/runs answers.
func parseRunFilter(v url.Values) (runFilter, error) {
	g := func(k string) string { return strings.TrimSpace(v.Get(k)) }
	f := runFilter{Status: g("status"), JobID: g("job_id"), Trigger: g("trigger"), Since: g("since"), Until: g("until")}
	bad := map[string]string{}
	switch f.Status {
	case "":
		f.Status = string(chronos.StatusDead)
		f.Query.Status = chronos.StatusDead
	case anyStatus:
	default:
		f.Query.Status = chronos.RunStatus(f.Status)
		if !f.Query.Status.Valid() {
			bad["status"] = "must be one of any, pending, leased, running, succeeded, dead"
		}
	}
	switch chronos.Trigger(f.Trigger) {
	case "", chronos.TriggerSchedule, chronos.TriggerManual, chronos.TriggerRedrive, chronos.TriggerBackfill:
		f.Query.Trigger = chronos.Trigger(f.Trigger)
	default:
		bad["trigger"] = "must be one of schedule, manual, redrive, backfill"
	}
	if f.JobID != "" {
		id, err := strconv.ParseInt(strings.TrimPrefix(f.JobID, "#"), 10, 64)
		if err != nil || id < 1 {
			bad["job_id"] = "must be a positive integer"
		}
		f.Query.JobID = id
	}
	var err error
	if f.Query.Since, err = parseUTC(f.Since); err != nil {
		bad["since"] = err.Error()
	} else if f.Query.Since != nil {
		f.Since = f.Query.Since.Format(localLayout + ".999999999") // as the datetime-local input shows it
	}
	if f.Query.Until, err = parseUTC(f.Until); err != nil {
		bad["until"] = err.Error()
	} else if f.Query.Until != nil {
		f.Until = f.Query.Until.Format(localLayout + ".999999999")
	}
	if len(bad) > 0 {
		return f, chronos.InvalidFields(bad)
	}
	return f, nil
}

// parseUTC reads an optional time in UTC: nil for "".
func parseUTC(s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	if t, err := parseLocal(s, time.UTC); err == nil {
		return &t, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		t = t.UTC()
		return &t, nil
	}
	return nil, errors.New("must be a date and time in UTC, e.g. 2026-12-24T18:00")
}
