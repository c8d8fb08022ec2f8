package http

import (
	nethttp "net/http"

	"github.com/gin-gonic/gin"

	"github.com/chronoshq/chronos"
)

// limitInput is the body of PUT /v1/limits/{key}: the limit's settings.
// Absent or null max_concurrency or rate means none of that kind; at
// least one is required.
type limitInput struct {
	MaxConcurrency *int `json:"max_concurrency"`
	Rate           *int `json:"rate"`
	PerSeconds     *int `json:"per_seconds"`
}

// limitList is the body of GET /v1/limits.
type limitList struct {
	Limits []*chronos.Limit `json:"limits"`
}

// limitKey reads and checks :key.
func limitKey(c *gin.Context) (string, error) {
	key := c.Param("key")
	if err := chronos.ValidateLimitKey("key", key); err != nil {
		return "", err
	}
	if _, err := parseQuery(c); err != nil {
		return "", err
	}
	return key, nil
}

// putLimit is PUT /v1/limits/{key}: create (201) or replace (200).
func (s *Server) putLimit(c *gin.Context) {
	key, err := limitKey(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	body, err := s.readBody(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	if len(trimSpace(body)) == 0 {
		s.fail(c, invalid("body", `a JSON object such as {"max_concurrency": 5} is required`))
		return
	}
	var in limitInput
	if _, err := decodeObject(body, &in); err != nil {
		s.fail(c, err)
		return
	}
	l := &chronos.Limit{Key: key, MaxConcurrency: in.MaxConcurrency, Rate: in.Rate, PerSeconds: in.PerSeconds}
	created, err := s.db.PutLimit(c.Request.Context(), l)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.bus.Publish(chronos.Event{Type: chronos.EventLimitChanged, Instance: s.cfg.Instance, Op: "put", Key: key})
	status := nethttp.StatusOK
	if created {
		status = nethttp.StatusCreated
	}
	s.reply(c, status, l)
}

// getLimit is GET /v1/limits/{key}.
func (s *Server) getLimit(c *gin.Context) {
	key, err := limitKey(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	l, err := s.db.Limit(c.Request.Context(), key)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.reply(c, nethttp.StatusOK, l)
}

// listLimits is GET /v1/limits: every declared limit with its state.
func (s *Server) listLimits(c *gin.Context) {
	if _, err := parseQuery(c); err != nil {
		s.fail(c, err)
		return
	}
	ls, err := s.db.Limits(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	if ls == nil {
		ls = []*chronos.Limit{}
	}
	s.reply(c, nethttp.StatusOK, limitList{Limits: ls})
}

// deleteLimit is DELETE /v1/limits/{key}: 409 while a job names it.
func (s *Server) deleteLimit(c *gin.Context) {
	key, err := limitKey(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	if err := s.db.DeleteLimit(c.Request.Context(), key); err != nil {
		s.fail(c, err)
		return
	}
	s.bus.Publish(chronos.Event{Type: chronos.EventLimitChanged, Instance: s.cfg.Instance, Op: "deleted", Key: key})
	c.Status(nethttp.StatusNoContent)
}
