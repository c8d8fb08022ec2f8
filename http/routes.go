package http

import (
	nethttp "net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/chronoshq/chronos"
)

// routes builds the gin engine. Every route here must also be in
// openapi.yaml (openapi_test.go checks both ways).
func (s *Server) routes() *gin.Engine {
	e := gin.New()
	e.HandleMethodNotAllowed = true
	// No redirect from /v1/jobs/ to /v1/jobs: it would answer before
	// authentication and tell a stranger which paths exist.
	e.RedirectTrailingSlash = false
	// Do not trust X-Forwarded-For from anyone: the API sits behind
	// whatever the operator chose, and ClientIP is only used for logs.
	_ = e.SetTrustedProxies(nil)
	e.Use(s.requestID, s.recovery, s.logRequests, s.limitBody)
	e.NoRoute(s.guardUnknown(func(c *gin.Context) {
		s.fail(c, chronos.Errorf(chronos.ENOTFOUND, "no route %s %s", c.Request.Method, c.Request.URL.Path))
	}))
	e.NoMethod(s.guardUnknown(func(c *gin.Context) {
		c.Header("Allow", allowedMethods(e, c))
		writeEnvelope(c, nethttp.StatusMethodNotAllowed, &chronos.Error{Code: "method_not_allowed",
			Message: "method " + c.Request.Method + " not allowed on " + c.Request.URL.Path})
	}))

	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	if !s.cfg.SeparateMetrics {
		e.GET("/metrics", s.metricsHandler())
	}
	e.GET("/openapi.yaml", s.openapi)

	v1 := e.Group("/v1", s.authenticate)
	v1.POST("/jobs", s.idempotent, s.createJob)
	v1.POST("/jobs/batch", s.idempotent, s.createJobs)
	v1.GET("/jobs", s.listJobs)
	v1.POST("/jobs/pause", s.pauseJobs)
	v1.POST("/jobs/resume", s.resumeJobs)
	v1.GET("/jobs/deleted", s.deletedJobs)
	v1.GET("/jobs/:id", s.getJob)
	v1.PATCH("/jobs/:id", s.updateJob)
	v1.DELETE("/jobs/:id", s.deleteJob)
	v1.POST("/jobs/:id/trigger", s.idempotent, s.triggerJob)
	v1.POST("/jobs/:id/signing-secret", s.rotateSigningSecret)
	v1.DELETE("/jobs/:id/signing-secret", s.deleteSigningSecrets)
	v1.GET("/jobs/:id/runs", s.listRuns)
	v1.GET("/jobs/:id/schedule", s.jobSchedule)
	v1.POST("/schedule/preview", s.previewSchedule)
	v1.GET("/jobs/:id/history", s.jobHistory)
	v1.GET("/runs", s.listAllRuns)
	v1.POST("/runs/redrive", s.idempotent, s.redriveRuns)
	v1.GET("/runs/:id", s.getRun)
	v1.POST("/runs/:id/redrive", s.idempotent, s.redriveRun)
	v1.GET("/events", s.tapSlot, s.events)
	v1.GET("/limits", showAll(s, s.db.Limits, newLimitList))
	v1.GET("/limits/:key", show(s, limitKey, s.db.Limit))
	v1.PUT("/limits/:key", s.putLimit)
	v1.DELETE("/limits/:key", remove(s, limitKey, s.db.DeleteLimit, s.limitDeleted))
	v1.GET("/hosts", showAll(s, s.db.Hosts, newHostList))
	v1.GET("/hosts/*origin", s.getHost)
	v1.POST("/jobs/:id/backfill", s.idempotent, s.backfill)
	v1.GET("/calendars", showAll(s, s.db.Calendars, newCalendarList))
	v1.GET("/calendars/:name", show(s, calendarName, s.db.Calendar))
	v1.PUT("/calendars/:name", s.putCalendar)
	v1.DELETE("/calendars/:name", remove(s, calendarName, s.db.DeleteCalendar, nil))
	return e
}

// allowedMethods lists the methods registered for the request's path, for
// the Allow header of a 405.
func allowedMethods(e *gin.Engine, c *gin.Context) string {
	out := ""
	for _, m := range []string{nethttp.MethodGet, nethttp.MethodPost, nethttp.MethodPut, nethttp.MethodPatch, nethttp.MethodDelete} {
		for _, r := range e.Routes() {
			if r.Method == m && pathMatches(r.Path, c.Request.URL.Path) {
				if out != "" {
					out += ", "
				}
				out += m
				break
			}
		}
	}
	return out
}

// pathMatches reports whether a concrete path fits a gin pattern with
// :params (no wildcards are used here).
func pathMatches(pattern, path string) bool {
	ps, xs := strings.Split(strings.Trim(pattern, "/"), "/"), strings.Split(strings.Trim(path, "/"), "/")
	if len(ps) != len(xs) {
		return false
	}
	for i := range ps {
		if len(ps[i]) > 0 && ps[i][0] == ':' {
			continue
		}
		if ps[i] != xs[i] {
			return false
		}
	}
	return true
}
