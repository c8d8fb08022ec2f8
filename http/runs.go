package http

import (
	"context"
	nethttp "net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// runList is the body of GET /v1/jobs/{id}/runs.
type runList struct {
	Runs       []*chronos.Run `json:"runs"`
	NextCursor *string        `json:"next_cursor"`
}

// runDetail is the body of GET /v1/runs/{id}: the run and every attempt,
// with attempts always present (an empty array before the first).
type runDetail struct {
	*chronos.Run
	Attempts []chronos.Attempt `json:"attempts"`
}

var runStatuses = []chronos.RunStatus{chronos.StatusPending, chronos.StatusLeased, chronos.StatusRunning, chronos.StatusSucceeded, chronos.StatusDead, chronos.StatusMissed}

// triggerJob is POST /v1/jobs/{id}/trigger: a manual run, available now.
// The run goes onto the local bus right after the commit and before the
// response, so this instance's dispatcher starts it without waiting for
// its own NOTIFY to come back.
func (s *Server) triggerJob(c *gin.Context) { s.runAction(c, s.db.Trigger) }

// redriveRun is POST /v1/runs/{id}/redrive: a dead run becomes a new
// pending run; anything else is a 409.
func (s *Server) redriveRun(c *gin.Context) { s.runAction(c, s.db.Redrive) }

// runAnswer is the 202 of a run created by a trigger or a redrive.
func runAnswer(r *chronos.Run) (sql.IdempotentResponse, error) {
	return jsonAnswer(nethttp.StatusAccepted, runUTC(r), "")
}

// announce publishes a freshly committed pending run on the local bus.
func (s *Server) announce(r *chronos.Run) {
	at := r.AvailableAt.UTC()
	s.bus.Publish(chronos.Event{
		Type:        chronos.EventRunChanged,
		Instance:    s.cfg.Instance,
		RunID:       r.ID,
		JobID:       r.JobID,
		Status:      chronos.StatusPending,
		AvailableAt: &at,
	})
}

// noBody refuses a body on an action endpoint that takes none (an empty
// JSON object is tolerated, as clients often send one).
func (s *Server) noBody(c *gin.Context) error {
	b, err := s.readBody(c)
	if err != nil {
		return err
	}
	if t := string(trimSpace(b)); t != "" && t != "{}" {
		return invalid("body", "this endpoint takes no request body")
	}
	return nil
}

// listRuns is GET /v1/jobs/{id}/runs, newest first.
func (s *Server) listRuns(c *gin.Context) {
	id, q, err := idAndQuery(c, "status", "limit", "cursor")
	if err != nil {
		s.fail(c, err)
		return
	}
	f := sql.RunFilter{Cursor: q["cursor"]}
	if v, ok := q["status"]; ok {
		f.Status = chronos.RunStatus(v)
		if !f.Status.Valid() {
			names := make([]string, len(runStatuses))
			for i, st := range runStatuses {
				names[i] = string(st)
			}
			s.fail(c, invalid("status", "must be one of "+strings.Join(names, ", ")))
			return
		}
	}
	if f.Limit, err = parseLimit(q); err != nil {
		s.fail(c, err)
		return
	}
	if runs, next, ok := page(s, c, f.Cursor, func(ctx context.Context) ([]*chronos.Run, string, error) { return s.db.Runs(ctx, id, f) }); ok {
		s.reply(c, nethttp.StatusOK, newRunList(runs, next))
	}
}

// getRun is GET /v1/runs/{id}.
func (s *Server) getRun(c *gin.Context) {
	r, ok := byID(s, c, s.db.Run)
	if !ok {
		return
	}
	out := runDetail{Run: runUTC(r), Attempts: make([]chronos.Attempt, 0, len(r.Attempts))}
	for _, a := range r.Attempts {
		a.StartedAt = a.StartedAt.UTC()
		a.FinishedAt = utcPtr(a.FinishedAt)
		out.Attempts = append(out.Attempts, a)
	}
	s.reply(c, nethttp.StatusOK, out)
}

// runUTC puts every time of a run in UTC for the wire.
func runUTC(r *chronos.Run) *chronos.Run {
	c := *r
	c.ScheduledAt = r.ScheduledAt.UTC()
	c.AvailableAt = r.AvailableAt.UTC()
	c.CreatedAt = r.CreatedAt.UTC()
	c.LeasedUntil = utcPtr(r.LeasedUntil)
	c.StartedAt = utcPtr(r.StartedAt)
	c.FinishedAt = utcPtr(r.FinishedAt)
	c.Attempts = nil
	return &c
}
