package http

import (
	nethttp "net/http"

	"github.com/gin-gonic/gin"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// backfill is POST /v1/jobs/{id}/backfill: a run for each occurrence of
// the job's schedule in [from, to) that has none, oldest first (202), or,
// with dry_run, the occurrences only (200). Idempotency-Key is honoured
// (stored with the runs).
func (s *Server) backfill(c *gin.Context) {
	var r chronos.BackfillRequest
	id, err := withBody(s, c, s.idAndNoQuery, &r, `a JSON object with "from" and "to" is required`)
	if err != nil {
		s.fail(c, err)
		return
	}
	setAnswer(c, func(v ...any) (sql.IdempotentResponse, error) { return backfillAnswer(v[0].(*chronos.Backfill)) })
	b, err := s.db.Backfill(c.Request.Context(), id, r)
	if err != nil {
		s.fail(c, err)
		return
	}
	for _, run := range b.Created {
		s.announce(run)
	}
	a, err := backfillAnswer(&b)
	if err != nil {
		s.fail(c, err)
		return
	}
	writeAnswer(c, a)
}

// backfillAnswer is a backfill's response: 200 for a dry run, 202 when
// runs were asked for.
func backfillAnswer(b *chronos.Backfill) (sql.IdempotentResponse, error) {
	status := nethttp.StatusAccepted
	if b.DryRun {
		status = nethttp.StatusOK
	}
	out := *b
	for i, r := range out.Created {
		out.Created[i] = runUTC(r)
	}
	return jsonAnswer(status, out, "")
}
