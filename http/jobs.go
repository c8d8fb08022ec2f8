package http

import (
	"context"
	nethttp "net/http"
	"reflect"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// jobList is the body of GET /v1/jobs.
type jobList struct {
	Jobs       []*chronos.Job `json:"jobs"`
	NextCursor *string        `json:"next_cursor"`
}

// newJob builds the job a create request describes (chronos.NewJob, shared
// with the console), its URLs checked against the target policy, with its
// generated signing secret if it asked for one (shown once).
func (s *Server) newJob(u *chronos.JobUpdate) (*chronos.Job, string, error) {
	j, err := chronos.NewJob(u)
	if err == nil {
		err = s.checkTarget(j.TargetURL)
	}
	if err == nil && j.OnDeadURL != nil {
		err = s.checkURL("on_dead_url", *j.OnDeadURL)
	}
	if err != nil {
		return nil, "", err
	}
	secret := ""
	if u.GenerateSigningSecret.Value {
		secret = chronos.NewSigningSecret()
		j.SigningSecrets = []chronos.SigningSecret{{Secret: secret, CreatedAt: time.Now().UTC()}}
	}
	return j, secret, nil
}

// createJob is POST /v1/jobs.
func (s *Server) createJob(c *gin.Context) {
	var u chronos.JobUpdate
	if _, err := withBody(s, c, noQuery, &u, "a JSON object describing the job is required"); err != nil {
		s.fail(c, err)
		return
	}
	j, secret, err := s.newJob(&u)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.create(c, func(ctx context.Context) error { return s.db.CreateJob(ctx, j) },
		func() (sql.IdempotentResponse, error) { return createdAnswer(j, secret) }, secret != "")
}

// createdAnswer is the 201 of a created job, with its generated signing
// secret if one was asked for (shown this once).
func createdAnswer(j *chronos.Job, secret string) (sql.IdempotentResponse, error) {
	loc := "/v1/jobs/" + itoa64(j.ID)
	if secret != "" {
		return jsonAnswer(nethttp.StatusCreated, jobWithSecret{jobUTC(j), secret}, loc)
	}
	return jsonAnswer(nethttp.StatusCreated, jobUTC(j), loc)
}

// listJobs is GET /v1/jobs.
func (s *Server) listJobs(c *gin.Context) {
	q, many, err := parseQueryMulti(c, []string{"label"}, "enabled", "limit", "cursor", "name_prefix", "q")
	if err != nil {
		s.fail(c, err)
		return
	}
	f := sql.JobFilter{Cursor: q["cursor"]}
	if err := searchFilter(&f, q, many["label"]); err != nil {
		s.fail(c, err)
		return
	}
	if f.Enabled, err = parseBool(q, "enabled"); err != nil {
		s.fail(c, err)
		return
	}
	if f.Limit, err = parseLimit(q); err != nil {
		s.fail(c, err)
		return
	}
	jobs, next, ok := page(s, c, f.Cursor, func(ctx context.Context) ([]*chronos.Job, string, error) { return s.db.Jobs(ctx, f) })
	if !ok {
		return
	}
	out := jobList{Jobs: make([]*chronos.Job, 0, len(jobs)), NextCursor: cursorPtr(next)}
	for _, j := range jobs {
		out.Jobs = append(out.Jobs, jobUTC(j))
	}
	s.reply(c, nethttp.StatusOK, out)
}

// getJob is GET /v1/jobs/{id}.
func (s *Server) getJob(c *gin.Context) {
	if j, ok := byID(s, c, s.db.Job); ok {
		s.reply(c, nethttp.StatusOK, jobUTC(j))
	}
}

// updateJob is PATCH /v1/jobs/{id}: a true partial update. An empty body
// or {} changes nothing and returns the job as stored.
func (s *Server) updateJob(c *gin.Context) {
	var u chronos.JobUpdate
	id, err := s.idAndNoQuery(c)
	n := 0
	if err == nil {
		n, err = s.optionalBody(c, &u)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	if u.GenerateSigningSecret.Set {
		s.fail(c, invalid("generate_signing_secret", "only at create; rotate with POST /v1/jobs/{id}/signing-secret"))
		return
	}
	if u.TargetURL.Set && !u.TargetURL.Null {
		if err := s.checkTarget(u.TargetURL.Value); err != nil {
			s.fail(c, err)
			return
		}
	}
	if u.OnDeadURL.Set && !u.OnDeadURL.Null && u.OnDeadURL.Value != "" {
		if err := s.checkURL("on_dead_url", u.OnDeadURL.Value); err != nil {
			s.fail(c, err)
			return
		}
	}
	var j *chronos.Job
	if n == 0 || !anySet(&u) {
		j, err = s.db.Job(c.Request.Context(), id)
	} else {
		j, err = s.db.UpdateJob(c.Request.Context(), id, &u)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	s.reply(c, nethttp.StatusOK, jobUTC(j))
}

// deleteJob is DELETE /v1/jobs/{id}.
func (s *Server) deleteJob(c *gin.Context) {
	if _, ok := byID(s, c, deleted(s.db.DeleteJob)); ok {
		c.Status(nethttp.StatusNoContent)
	}
}

// anySet reports whether any field of a JobUpdate is Set. Reflection keeps
// it right when fields are added to JobUpdate.
func anySet(u *chronos.JobUpdate) bool {
	v := reflect.ValueOf(u).Elem()
	for i := 0; i < v.NumField(); i++ {
		if f := v.Field(i).FieldByName("Set"); f.IsValid() && f.Bool() {
			return true
		}
	}
	return false
}

// jobUTC puts every time of a job in UTC for the wire, whatever zone the
// driver handed back, and masks its secret header values: every job
// response goes through it.
func jobUTC(j *chronos.Job) *chronos.Job {
	c := *j.Redacted()
	if c.SigningSecrets == nil {
		c.SigningSecrets = []chronos.SigningSecret{}
	}
	c.RunAt = utcPtr(j.RunAt)
	c.NextRunAt = utcPtr(j.NextRunAt)
	c.CreatedAt = j.CreatedAt.UTC()
	c.UpdatedAt = j.UpdatedAt.UTC()
	return &c
}

// checkTarget refuses a target URL whose host is a literal address the
// outbound policy in force refuses: a 400 now beats a dead run later.
func (s *Server) checkTarget(u string) error { return s.checkURL("target_url", u) }

// checkURL is checkTarget for any outbound URL of a job, named field
// (on_dead_url goes out through the same transport, under the same
// policy).
func (s *Server) checkURL(field, u string) error {
	if err := s.cfg.TargetPolicy.CheckURL(u); err != nil {
		return invalid(field, err.Error())
	}
	return nil
}
