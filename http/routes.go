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
	for _, r := range s.v1Routes() {
		for _, m := range r.methods {
			v1.Handle(m.method, r.path, m.chain...)
		}
	}
	return e
}

// v1Routes are the paths under /v1 and what each answers, by method, in
// the order they were added in.
func (s *Server) v1Routes() []route {
	return []route{
		at("/jobs", post(s.idempotent, s.createJob), get(s.listJobs)),
		at("/jobs/batch", post(s.idempotent, s.createJobs)),
		at("/jobs/pause", post(s.pauseJobs)),
		at("/jobs/resume", post(s.resumeJobs)),
		at("/jobs/deleted", get(s.deletedJobs)),
		at("/jobs/:id", get(s.getJob), patch(s.updateJob), del(s.deleteJob)),
		at("/jobs/:id/trigger", post(s.idempotent, s.triggerJob)),
		at("/jobs/:id/signing-secret", post(s.rotateSigningSecret), del(s.deleteSigningSecrets)),
		at("/jobs/:id/runs", get(s.listRuns)),
		at("/jobs/:id/schedule", get(s.jobSchedule)),
		at("/schedule/preview", post(s.previewSchedule)),
		at("/jobs/:id/history", get(s.jobHistory)),
		at("/runs", get(s.listAllRuns)),
		at("/runs/redrive", post(s.idempotent, s.redriveRuns)),
		at("/runs/:id", get(s.getRun)),
		at("/runs/:id/redrive", post(s.idempotent, s.redriveRun)),
		at("/events", get(s.tapSlot, s.events)),
		at("/limits", get(showAll(s, s.db.Limits, newLimitList))),
		at("/limits/:key", get(show(s, limitKey, s.db.Limit)), put(s.putLimit),
			del(remove(s, limitKey, s.db.DeleteLimit, s.limitDeleted))),
		at("/hosts", get(showAll(s, s.db.Hosts, newHostList))),
		at("/hosts/*origin", get(s.getHost)),
		at("/jobs/:id/backfill", post(s.idempotent, s.backfill)),
		at("/calendars", get(showAll(s, s.db.Calendars, newCalendarList))),
		at("/calendars/:name", get(show(s, calendarName, s.db.Calendar)), put(s.putCalendar),
			del(remove(s, calendarName, s.db.DeleteCalendar, s.calendarDeleted))),
	}
}

// route is a path and what it answers, by method: one row of v1Routes,
// as openapi.yaml has one entry a path.
type route struct {
	path    string
	methods []method
}

// method is one method of a route and its handler chain.
type method struct {
	method string
	chain  []gin.HandlerFunc
}

func at(path string, ms ...method) route { return route{path: path, methods: ms} }

func get(h ...gin.HandlerFunc) method   { return method{nethttp.MethodGet, h} }
func post(h ...gin.HandlerFunc) method  { return method{nethttp.MethodPost, h} }
func put(h ...gin.HandlerFunc) method   { return method{nethttp.MethodPut, h} }
func patch(h ...gin.HandlerFunc) method { return method{nethttp.MethodPatch, h} }
func del(h ...gin.HandlerFunc) method   { return method{nethttp.MethodDelete, h} }

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
