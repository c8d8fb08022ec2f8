package http

import (
	"fmt"
	nethttp "net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/chronoshq/chronos"
)

// Preview counts: ?count= and "count".
const (
	defaultPreviewCount = 10
	maxPreviewCount     = 100
	// With until, a preview lists every fire time up to it, at most
	// maxPreviewSpan (ten years of a daily job).
	maxPreviewSpan = 5000
)

// previewRequest is the body of POST /v1/schedule/preview: a schedule and
// its policy fields, as on a job, plus count and after.
type previewRequest struct {
	CronExpr                *string                `json:"cron_expr"`
	Timezone                *string                `json:"timezone"`
	Count                   *int                   `json:"count"`
	After                   *time.Time             `json:"after"`
	StartsAt                *time.Time             `json:"starts_at"`
	EndsAt                  *time.Time             `json:"ends_at"`
	Exclude                 []chronos.DateRange    `json:"exclude"`
	Misfire                 chronos.MisfirePolicy  `json:"misfire"`
	StartingDeadlineSeconds *int                   `json:"starting_deadline_seconds"`
	JitterSeconds           int                    `json:"jitter_seconds"`
	Until                   *time.Time             `json:"until"`
	Calendars               []string               `json:"calendars"`
	CalendarPolicy          chronos.CalendarPolicy `json:"calendar_policy"`
}

// jobSchedule is GET /v1/jobs/{id}/schedule?count=&after=: the job's next
// fire times, from the database's clock unless after is given.
func (s *Server) jobSchedule(c *gin.Context) {
	id, q, err := idAndQuery(c, "count", "after", "until")
	if err != nil {
		s.fail(c, err)
		return
	}
	var after, until *time.Time
	for name, dst := range map[string]**time.Time{"after": &after, "until": &until} {
		if v, ok := q[name]; ok {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				s.fail(c, invalid(name, "must be an RFC 3339 time, e.g. 2026-12-03T02:00:00Z"))
				return
			}
			*dst = &t
		}
	}
	n, err := parseCount(q, until != nil)
	if err != nil {
		s.fail(c, err)
		return
	}
	j, err := s.db.Job(c.Request.Context(), id)
	if err != nil {
		s.fail(c, err)
		return
	}
	from, err := s.previewFrom(c, after)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.preview(c, j, from, until, n)
}

// previewSchedule is POST /v1/schedule/preview: the fire times of a
// schedule that is not (yet) a job, validated by the rules of a job.
// "@every" counts from starts_at, else from after (default now).
func (s *Server) previewSchedule(c *gin.Context) {
	var r previewRequest
	if _, err := withBody(s, c, noQuery, &r, "a JSON object with cron_expr is required"); err != nil {
		s.fail(c, err)
		return
	}
	if r.CronExpr == nil {
		s.fail(c, invalid("cron_expr", "is required"))
		return
	}
	n, most := defaultPreviewCount, maxPreviewCount
	if r.Until != nil {
		n, most = maxPreviewSpan, maxPreviewSpan
	}
	if r.Count != nil {
		if n = *r.Count; n < 1 || n > most {
			s.fail(c, invalid("count", fmt.Sprintf("must be between 1 and %d", most)))
			return
		}
	}
	// A job of this schedule, checked by the job's own rules; the fields
	// that are not the schedule's are stand-ins that always pass.
	j := &chronos.Job{Name: "preview", TargetURL: "http://preview.invalid/", CronExpr: r.CronExpr,
		StartsAt: r.StartsAt, EndsAt: r.EndsAt, Exclude: r.Exclude, Misfire: r.Misfire,
		StartingDeadlineSeconds: r.StartingDeadlineSeconds, JitterSeconds: r.JitterSeconds,
		Calendars: r.Calendars, CalendarPolicy: r.CalendarPolicy}
	if r.Timezone != nil {
		j.Timezone = *r.Timezone
	}
	j.ApplyDefaults()
	if err := j.Validate(); err != nil {
		s.fail(c, err)
		return
	}
	if err := s.db.ResolveCalendars(c.Request.Context(), j); err != nil {
		s.fail(c, err)
		return
	}
	from, err := s.previewFrom(c, r.After)
	if err != nil {
		s.fail(c, err)
		return
	}
	j.CreatedAt = from // a schedule without a job: @every counts from here
	// As at create: an expression that never fires again is a 400.
	if err := j.ValidateSchedule(from); err != nil {
		s.fail(c, err)
		return
	}
	s.preview(c, j, from, r.Until, n)
}

// previewFrom is the instant previews start after: after, or the
// database's clock.
func (s *Server) previewFrom(c *gin.Context, after *time.Time) (time.Time, error) {
	if after != nil {
		return after.UTC(), nil
	}
	return s.db.Now(c.Request.Context())
}

// preview answers with n fire times of j after from (up to until, when
// given), and what its calendars skipped or moved.
func (s *Server) preview(c *gin.Context, j *chronos.Job, from time.Time, until *time.Time, n int) {
	var u time.Time
	if until != nil {
		u = until.UTC()
	}
	p, err := j.PreviewUntil(from, u, n)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(nethttp.StatusOK, p)
}

// parseCount reads ?count= (1..100, default 10; with until, 1..5000,
// default 5000).
func parseCount(q map[string]string, until bool) (int, error) {
	n, most := defaultPreviewCount, maxPreviewCount
	if until {
		n, most = maxPreviewSpan, maxPreviewSpan
	}
	v, ok := q["count"]
	if !ok {
		return n, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > most {
		return 0, invalid("count", fmt.Sprintf("must be an integer between 1 and %d", most))
	}
	return n, nil
}
