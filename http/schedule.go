package http

import (
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
)

// previewRequest is the body of POST /v1/schedule/preview: a schedule and
// its policy fields, as on a job, plus count and after.
type previewRequest struct {
	CronExpr                *string               `json:"cron_expr"`
	Timezone                *string               `json:"timezone"`
	Count                   *int                  `json:"count"`
	After                   *time.Time            `json:"after"`
	StartsAt                *time.Time            `json:"starts_at"`
	EndsAt                  *time.Time            `json:"ends_at"`
	Exclude                 []chronos.DateRange   `json:"exclude"`
	Misfire                 chronos.MisfirePolicy `json:"misfire"`
	StartingDeadlineSeconds *int                  `json:"starting_deadline_seconds"`
	JitterSeconds           int                   `json:"jitter_seconds"`
}

// jobSchedule is GET /v1/jobs/{id}/schedule?count=&after=: the job's next
// fire times, from the database's clock unless after is given.
func (s *Server) jobSchedule(c *gin.Context) {
	id, err := parseID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	q, err := parseQuery(c, "count", "after")
	if err != nil {
		s.fail(c, err)
		return
	}
	n, err := parseCount(q)
	if err != nil {
		s.fail(c, err)
		return
	}
	var after *time.Time
	if v, ok := q["after"]; ok {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			s.fail(c, invalid("after", "must be an RFC 3339 time, e.g. 2026-12-03T02:00:00Z"))
			return
		}
		after = &t
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
	s.preview(c, j, from, n)
}

// previewSchedule is POST /v1/schedule/preview: the fire times of a
// schedule that is not (yet) a job, validated by the rules of a job.
// "@every" counts from starts_at, else from after (default now).
func (s *Server) previewSchedule(c *gin.Context) {
	var r previewRequest
	_, err := parseQuery(c)
	if err == nil {
		err = s.requiredBody(c, &r, "a JSON object with cron_expr is required")
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	if r.CronExpr == nil {
		s.fail(c, invalid("cron_expr", "is required"))
		return
	}
	n := defaultPreviewCount
	if r.Count != nil {
		if n = *r.Count; n < 1 || n > maxPreviewCount {
			s.fail(c, invalid("count", "must be between 1 and 100"))
			return
		}
	}
	// A job of this schedule, checked by the job's own rules; the fields
	// that are not the schedule's are stand-ins that always pass.
	j := &chronos.Job{Name: "preview", TargetURL: "http://preview.invalid/", CronExpr: r.CronExpr,
		StartsAt: r.StartsAt, EndsAt: r.EndsAt, Exclude: r.Exclude, Misfire: r.Misfire,
		StartingDeadlineSeconds: r.StartingDeadlineSeconds, JitterSeconds: r.JitterSeconds}
	if r.Timezone != nil {
		j.Timezone = *r.Timezone
	}
	j.ApplyDefaults()
	if err := j.Validate(); err != nil {
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
	s.preview(c, j, from, n)
}

// previewFrom is the instant previews start after: after, or the
// database's clock.
func (s *Server) previewFrom(c *gin.Context, after *time.Time) (time.Time, error) {
	if after != nil {
		return after.UTC(), nil
	}
	return s.db.Now(c.Request.Context())
}

// preview answers with n fire times of j after from.
func (s *Server) preview(c *gin.Context, j *chronos.Job, from time.Time, n int) {
	p, err := j.Preview(from, n)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(nethttp.StatusOK, p)
}

// parseCount reads ?count= (1..100, default 10).
func parseCount(q map[string]string) (int, error) {
	v, ok := q["count"]
	if !ok {
		return defaultPreviewCount, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxPreviewCount {
		return 0, invalid("count", "must be an integer between 1 and 100")
	}
	return n, nil
}
