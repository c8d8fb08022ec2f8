package http

import (
	nethttp "net/http"

	"github.com/gin-gonic/gin"

	"github.com/chronoshq/chronos"
)

// bulkResult is the body of POST /v1/jobs/pause and /v1/jobs/resume.
type bulkResult struct {
	JobIDs []int64 `json:"job_ids"` // the jobs changed, in id order
	Count  int     `json:"count"`
	More   bool    `json:"more"` // more matching jobs wait for another call
}

// pauseJobs is POST /v1/jobs/pause?label=k=v...: pause every job with all
// those labels (at most 1,000 per call).
func (s *Server) pauseJobs(c *gin.Context) { s.setEnabledByLabels(c, false) }

// resumeJobs is POST /v1/jobs/resume?label=k=v...
func (s *Server) resumeJobs(c *gin.Context) { s.setEnabledByLabels(c, true) }

func (s *Server) setEnabledByLabels(c *gin.Context, enabled bool) {
	_, many, err := parseQueryMulti(c, []string{"label"})
	if err == nil {
		err = s.noBody(c)
	}
	var sel map[string]string
	if err == nil {
		if len(many["label"]) == 0 {
			err = invalid("label", "at least one label=value is required")
		} else if len(many["label"]) > chronos.MaxLabels {
			err = invalid("label", "at most 16 labels")
		} else {
			sel, err = chronos.ParseSelector("label", many["label"])
		}
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	ids, more, err := s.db.SetEnabledByLabels(c.Request.Context(), sel, enabled)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(nethttp.StatusOK, bulkResult{JobIDs: ids, Count: len(ids), More: more})
}
