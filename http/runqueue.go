package http

import (
	"context"
	nethttp "net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// redriveResult is the body of POST /v1/runs/redrive.
type redriveResult struct {
	Runs  []*chronos.Run `json:"runs"`  // the new pending runs, each with redrive_of
	Count int            `json:"count"` // len(runs)
	More  bool           `json:"more"`  // more matching dead runs wait for another call
}

// runQuery reads the filters shared by GET /v1/runs and POST
// /v1/runs/redrive from the query string: status, job_id, trigger, since,
// until (RFC 3339; on created_at, since inclusive, until exclusive), limit
// (maxLimit caps it) and, for lists, cursor.
func runQuery(c *gin.Context, maxLimit int, extra ...string) (sql.RunQuery, error) {
	q, err := parseQuery(c, append([]string{"status", "job_id", "trigger", "since", "until", "limit"}, extra...)...)
	if err != nil {
		return sql.RunQuery{}, err
	}
	rq := sql.RunQuery{Cursor: q["cursor"], Status: chronos.RunStatus(q["status"]), Trigger: chronos.Trigger(q["trigger"])}
	bad := map[string]string{}
	if _, ok := q["status"]; ok && !rq.Status.Valid() {
		names := make([]string, len(runStatuses))
		for i, st := range runStatuses {
			names[i] = string(st)
		}
		bad["status"] = "must be one of " + strings.Join(names, ", ")
	}
	switch rq.Trigger {
	case "", chronos.TriggerSchedule, chronos.TriggerManual, chronos.TriggerRedrive, chronos.TriggerBackfill:
	default:
		bad["trigger"] = "must be one of schedule, manual, redrive, backfill"
	}
	if v, ok := q["job_id"]; ok {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id < 1 {
			bad["job_id"] = "must be a positive integer"
		}
		rq.JobID = id
	}
	for _, name := range []string{"since", "until"} {
		v, ok := q[name]
		if !ok {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			bad[name] = "must be an RFC 3339 time, e.g. 2026-12-01T00:00:00Z"
			continue
		}
		t = t.UTC()
		if name == "since" {
			rq.Since = &t
		} else {
			rq.Until = &t
		}
	}
	if len(bad) > 0 {
		return rq, chronos.InvalidFields(bad)
	}
	if v, ok := q["limit"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return rq, invalid("limit", "must be an integer between 1 and "+strconv.Itoa(maxLimit))
		}
		rq.Limit = min(n, maxLimit)
	}
	return rq, nil
}

// listAllRuns is GET /v1/runs: the runs of every job, newest first; with
// status=dead, the dead-letter queue.
func (s *Server) listAllRuns(c *gin.Context) {
	rq, err := runQuery(c, MaxLimit, "cursor")
	if err != nil {
		s.fail(c, err)
		return
	}
	if runs, next, ok := page(s, c, rq.Cursor, func(ctx context.Context) ([]*chronos.Run, string, error) { return s.db.AllRuns(ctx, rq) }); ok {
		c.JSON(nethttp.StatusOK, newRunList(runs, next))
	}
}

// redriveRuns is POST /v1/runs/redrive: the dead runs that match the
// filters and were never redriven go round again, oldest first, at most
// sql.MaxRedriveBatch per call.
func (s *Server) redriveRuns(c *gin.Context) {
	rq, err := runQuery(c, sql.MaxRedriveBatch)
	if err == nil {
		err = s.noBody(c)
	}
	if err == nil && rq.Status != "" && rq.Status != chronos.StatusDead {
		err = invalid("status", "only dead runs can be redriven")
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	setAnswer(c, func(v ...any) (sql.IdempotentResponse, error) {
		return redriveAnswer(v[0].([]*chronos.Run), v[1].(bool))
	})
	runs, more, err := s.db.RedriveAll(c.Request.Context(), rq)
	if err != nil {
		s.fail(c, err)
		return
	}
	for _, r := range runs {
		s.announce(r)
	}
	a, err := redriveAnswer(runs, more)
	if err != nil {
		s.fail(c, err)
		return
	}
	writeAnswer(c, a)
}

// redriveAnswer is the 202 of POST /v1/runs/redrive.
func redriveAnswer(runs []*chronos.Run, more bool) (sql.IdempotentResponse, error) {
	out := redriveResult{Runs: make([]*chronos.Run, 0, len(runs)), Count: len(runs), More: more}
	for _, r := range runs {
		out.Runs = append(out.Runs, runUTC(r))
	}
	return jsonAnswer(nethttp.StatusAccepted, out, "")
}
