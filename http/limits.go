package http

import (
	"github.com/gin-gonic/gin"

	"github.com/chronoshq/chronos"
)

// limitList is the body of GET /v1/limits: every declared limit with its
// state.
type limitList struct {
	Limits []*chronos.Limit `json:"limits"`
}

func newLimitList(ls []*chronos.Limit) limitList { return limitList{Limits: ls} }

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
	var in chronos.LimitSettings
	key, err := withBody(s, c, limitKey, &in, `a JSON object such as {"max_concurrency": 5} is required`)
	if err != nil {
		s.fail(c, err)
		return
	}
	l := &chronos.Limit{Key: key, MaxConcurrency: in.MaxConcurrency, Rate: in.Rate, PerSeconds: in.PerSeconds}
	upsert(s, c, l, s.db.PutLimit, func(bool) {
		s.bus.Publish(chronos.Event{Type: chronos.EventLimitChanged, Instance: s.cfg.Instance, Op: "put", Key: key})
	})
}

// limitDeleted tells the instances a limit is gone (DELETE
// /v1/limits/{key}, which is a 409 while a job names it).
func (s *Server) limitDeleted(key string) {
	s.bus.Publish(chronos.Event{Type: chronos.EventLimitChanged, Instance: s.cfg.Instance, Op: "deleted", Key: key})
}
