package ui

import (
	"context"
	nethttp "net/http"
	"strconv"
	"time"

	"github.com/chronoshq/chronos"
)

// The backfill form: GET /ui/jobs/{id}/backfill?from=&to= shows the dry
// run (POST /v1/jobs/{id}/backfill with dry_run: the occurrences, which
// already have a run, what the calendars did) and, below it, the button
// that creates the runs (POST /ui/jobs/{id}/backfill). Nothing is created
// before the person has seen the list. from and to are wall-clock times
// in the job's zone, as the form's datetime-local inputs send them.

// backfillView is what the backfill page shows.
type backfillView struct {
	Job          *chronos.Job
	From, To     string // as typed (datetime-local, the job's zone)
	FromUTC      string // RFC 3339, for the create form
	ToUTC        string
	Plan         *chronos.Backfill
	Rows         []backfillRow
	ToRun        int
	Error        string
	Skipped      []string
	MaxBackfill  int
	HasSchedule  bool
	DefaultRange bool
}

// backfillRow is one occurrence of the dry run.
type backfillRow struct {
	At    time.Time
	Local string
	Has   bool // a run exists already
}

// backfillPage is GET /ui/jobs/{id}/backfill.
func (c *Console) backfillPage(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	j, ok := c.jobToChange(w, r, s)
	if !ok {
		return
	}
	ctx := r.Context()
	q := r.URL.Query()
	v := &backfillView{Job: j.Redacted(), From: q.Get("from"), To: q.Get("to"), MaxBackfill: chronos.MaxBackfill, HasSchedule: j.CronExpr != nil}
	status := nethttp.StatusOK
	if v.HasSchedule && (v.From != "" || v.To != "") {
		if err := c.dryRun(ctx, j, v); err != nil {
			if statusOf(err) != nethttp.StatusBadRequest {
				c.failErr(w, r, s, err)
				return
			}
			v.Error, status = chronos.ErrorMessage(err), nethttp.StatusBadRequest
		}
	}
	c.render(w, r, s, status, "backfill", "Backfill "+j.Name, v)
}

// dryRun fills v with the dry run of its range.
func (c *Console) dryRun(ctx context.Context, j *chronos.Job, v *backfillView) error {
	from, to, err := backfillRange(j, v.From, v.To)
	if err != nil {
		return err
	}
	b, err := c.db.Backfill(ctx, j.ID, chronos.BackfillRequest{From: from, To: to, DryRun: true})
	if err != nil {
		return err
	}
	v.Plan, v.FromUTC, v.ToUTC = &b, b.From.Format(time.RFC3339Nano), b.To.Format(time.RFC3339Nano)
	has := map[time.Time]bool{}
	for _, t := range b.Existing {
		has[t.UTC()] = true
	}
	loc := j.Location()
	for _, t := range b.Occurrences {
		v.Rows = append(v.Rows, backfillRow{At: t, Local: t.In(loc).Format("Mon 2006-01-02 15:04:05 MST"), Has: has[t.UTC()]})
		if !has[t.UTC()] {
			v.ToRun++
		}
	}
	for _, e := range b.Skipped {
		v.Skipped = append(v.Skipped, e.At.In(loc).Format("Mon 2006-01-02 15:04 MST")+" skipped ("+e.Calendar+")")
	}
	for _, e := range b.Shifted {
		to := "dropped: no business day"
		if e.To != nil {
			to = "moved to " + e.To.In(loc).Format("Mon 2006-01-02 15:04 MST")
		}
		v.Skipped = append(v.Skipped, e.At.In(loc).Format("Mon 2006-01-02 15:04 MST")+" "+to+" ("+e.Calendar+")")
	}
	return nil
}

// backfillRange reads the form's from and to, wall-clock times in the
// job's zone (to empty: now).
func backfillRange(j *chronos.Job, from, to string) (time.Time, time.Time, error) {
	loc := j.Location()
	bad := map[string]string{}
	f, err := parseLocal(from, loc)
	if err != nil {
		bad["from"] = "must be a date and time, e.g. 2026-12-01T00:00"
	}
	t := time.Now()
	if to != "" {
		if t, err = parseLocal(to, loc); err != nil {
			bad["to"] = "must be a date and time, e.g. 2026-12-02T00:00"
		}
	}
	if len(bad) > 0 {
		return f, t, chronos.InvalidFields(bad)
	}
	return f, t, nil
}

// backfill is POST /ui/jobs/{id}/backfill: create the runs the dry run
// showed (from and to as the dry run answered them, RFC 3339).
func (c *Console) backfill(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	id, ok := c.pathID(w, r, s)
	if !ok {
		return
	}
	from, err1 := time.Parse(time.RFC3339Nano, r.PostForm.Get("from"))
	to, err2 := time.Parse(time.RFC3339Nano, r.PostForm.Get("to"))
	if err1 != nil || err2 != nil {
		c.fail(w, r, s, nethttp.StatusBadRequest, "The backfill form lost its range: start again from the job page.")
		return
	}
	b, err := c.db.Backfill(r.Context(), id, chronos.BackfillRequest{From: from, To: to})
	if err != nil {
		c.failErr(w, r, s, err)
		return
	}
	for _, run := range b.Created {
		c.announce(run)
	}
	c.log.Info("console: backfill", "job_id", id, "key", s.Name, "created", len(b.Created), "existing", len(b.Existing))
	c.redirectDone(w, r, Prefix+"jobs/"+strconv.FormatInt(id, 10)+"#runs", "backfilled")
}

// withCalendars adds the names of the calendars to a form's data, for the
// calendars field's suggestions (none if they cannot be read: the field
// still takes any name, and the save names an unknown one).
func (c *Console) withCalendars(ctx context.Context, d map[string]any) map[string]any {
	cs, err := c.db.Calendars(ctx)
	if err != nil {
		return d
	}
	names := make([]string, 0, len(cs))
	for _, cal := range cs {
		names = append(names, cal.Name)
	}
	d["CalendarNames"] = names
	return d
}
