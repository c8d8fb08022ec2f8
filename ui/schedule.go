package ui

import (
	"context"
	nethttp "net/http"
	"strconv"
	"strings"
	"time"

	"github.com/chronoshq/chronos"
)

// fireCount is how many fire times the job page and the form preview.
const fireCount = 10

// firePreview is the next fire times of a schedule, as the job page and
// the form's live preview show them: each in the schedule's zone and in
// UTC. Problems, when set, say why there are none (an invalid schedule);
// Hint, when set, says what to type.
type firePreview struct {
	Zone        string
	Description string
	Times       []fireTime
	Now         time.Time
	Problems    []string
	Hint        string
	// Ended: the schedule has fewer fire times left than were asked for,
	// so these are its last.
	Ended bool
	// Effects say what the job's calendars did to occurrences among
	// these: skipped, or moved to the next business day.
	Effects []string
}

// fireTime is one fire time.
type fireTime struct {
	UTC   time.Time
	Local string
}

// previewOf builds the preview of j from the database's clock, by
// chronos.Job.Preview: the function behind GET /v1/jobs/{id}/schedule and
// POST /v1/schedule/preview.
func (c *Console) previewOf(ctx context.Context, j *chronos.Job) (*firePreview, error) {
	now, err := c.db.Now(ctx)
	if err != nil {
		return nil, err
	}
	return previewAt(j, now)
}

// previewAt is the preview of j's fire times after now.
func previewAt(j *chronos.Job, now time.Time) (*firePreview, error) {
	p := &firePreview{Zone: j.Timezone, Now: now}
	pv, err := j.Preview(now, fireCount)
	if err != nil {
		if chronos.ErrorCode(err) != chronos.EINVALID {
			return nil, err
		}
		p.Problems = problems(err)
		return p, nil
	}
	loc := j.Location()
	p.Description = pv.Description
	for _, t := range pv.FireTimes {
		p.Times = append(p.Times, fireTime{UTC: t.UTC(), Local: t.In(loc).Format("Mon 2006-01-02 15:04:05 MST")})
	}
	p.Ended = len(p.Times) < fireCount
	for _, e := range pv.Skipped {
		p.Effects = append(p.Effects, e.At.In(loc).Format("Mon 2006-01-02 15:04 MST")+" skipped: "+e.Date+" is on "+e.Calendar)
	}
	for _, e := range pv.Shifted {
		to := "dropped: no business day found"
		if e.To != nil {
			to = "moved to " + e.To.In(loc).Format("Mon 2006-01-02 15:04 MST")
		}
		p.Effects = append(p.Effects, e.At.In(loc).Format("Mon 2006-01-02 15:04 MST")+" "+to+": "+e.Date+" is on "+e.Calendar)
	}
	return p, nil
}

// schedulePreview is GET /ui/schedule/preview?cron_expr=&timezone=&kind=&job=:
// the form's live preview, an HTML fragment that htmx swaps in as the
// person types. The schedule is checked as POST /v1/schedule/preview
// checks it: a stand-in job of this schedule, by the job's own rules
// (chronos.Job.Validate, then ValidateSchedule from the database's clock:
// an expression that never fires again is an error), then previewed. When
// editing (job set), the stored job's other scheduling policies (starts,
// ends, exclusions) apply as they will after saving.
//
// A problem is an answer too (200, the fragment names it): htmx swaps only
// successful responses.
func (c *Console) schedulePreview(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	q := r.URL.Query()
	p, err := c.livePreview(r.Context(), q.Get("kind"), strings.TrimSpace(q.Get("cron_expr")), strings.TrimSpace(q.Get("timezone")), q.Get("job"))
	if err != nil && r.Context().Err() != nil {
		return // the browser gave up on it (htmx replaced it with a newer one)
	}
	if err != nil {
		c.log.Error("console: schedule preview", "error", err.Error())
		w.WriteHeader(nethttp.StatusInternalServerError)
		return
	}
	c.renderTemplate(w, s, nethttp.StatusOK, "jobform", "preview", p)
}

func (c *Console) livePreview(ctx context.Context, kind, expr, zone, jobID string) (*firePreview, error) {
	switch {
	case kind == "once":
		return &firePreview{Hint: "A one-shot job fires once, at the time above."}, nil
	case expr == "":
		return &firePreview{Hint: "Type a cron expression to see its next fire times."}, nil
	case len(expr) > 256:
		return &firePreview{Problems: []string{"cron_expr: must be at most 256 characters"}}, nil
	}
	j := &chronos.Job{Name: "preview", TargetURL: "http://preview.invalid/", CronExpr: &expr, Timezone: zone}
	if id, err := strconv.ParseInt(jobID, 10, 64); err == nil && id > 0 {
		stored, err := c.db.Job(ctx, id)
		switch {
		case err == nil:
			j.StartsAt, j.EndsAt, j.Exclude, j.Misfire = stored.StartsAt, stored.EndsAt, stored.Exclude, stored.Misfire
			j.StartingDeadlineSeconds, j.JitterSeconds, j.CreatedAt = stored.StartingDeadlineSeconds, stored.JitterSeconds, stored.CreatedAt
			j.Calendars, j.CalendarPolicy = stored.Calendars, stored.CalendarPolicy
		case chronos.ErrorCode(err) != chronos.ENOTFOUND:
			return nil, err
		}
	}
	j.ApplyDefaults()
	if err := j.Validate(); err != nil {
		return previewProblem(err)
	}
	if err := c.db.ResolveCalendars(ctx, j); err != nil {
		return previewProblem(err)
	}
	now, err := c.db.Now(ctx)
	if err != nil {
		return nil, err
	}
	if j.CreatedAt.IsZero() {
		j.CreatedAt = now // a schedule without a job: @every counts from now
	}
	if err := j.ValidateSchedule(now); err != nil {
		return previewProblem(err)
	}
	return previewAt(j, now)
}

// previewProblem turns a client's mistake into a preview that names it;
// anything else is an error.
func previewProblem(err error) (*firePreview, error) {
	if chronos.ErrorCode(err) != chronos.EINVALID {
		return nil, err
	}
	return &firePreview{Problems: problems(err)}, nil
}
