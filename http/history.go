package http

import (
	"context"
	nethttp "net/http"

	"github.com/gin-gonic/gin"

	"github.com/chronoshq/chronos"
)

// historyPage is the body of GET /v1/jobs/{id}/history.
type historyPage struct {
	Entries    []chronos.AuditEntry `json:"entries"`
	NextCursor *string              `json:"next_cursor"`
}

// jobHistory is GET /v1/jobs/{id}/history: who changed the job, when and
// how, newest first; also after the job was deleted.
func (s *Server) jobHistory(c *gin.Context) {
	id, q, err := idAndQuery(c, "limit", "cursor")
	if err != nil {
		s.fail(c, err)
		return
	}
	limit, err := parseLimit(q)
	if err != nil {
		s.fail(c, err)
		return
	}
	entries, next, ok := page(s, c, q["cursor"], func(ctx context.Context) ([]chronos.AuditEntry, string, error) {
		return s.db.History(ctx, id, q["cursor"], limit)
	})
	if !ok {
		return
	}
	out := historyPage{Entries: entries, NextCursor: cursorPtr(next)}
	if out.Entries == nil {
		out.Entries = []chronos.AuditEntry{}
	}
	c.JSON(nethttp.StatusOK, out)
}

// deletedJobs is GET /v1/jobs/deleted?name=NAME: the deleted jobs that had
// that name, newest first, so that a job's history (which outlives it) can
// be found by name once no job has the name.
func (s *Server) deletedJobs(c *gin.Context) {
	q, err := parseQuery(c, "name")
	if err != nil {
		s.fail(c, err)
		return
	}
	if q["name"] == "" {
		s.fail(c, invalid("name", "is required"))
		return
	}
	jobs, err := s.db.DeletedJobs(c.Request.Context(), q["name"])
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(nethttp.StatusOK, gin.H{"jobs": jobs})
}
