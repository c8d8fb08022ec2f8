package http

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	nethttp "net/http"
	"runtime/debug"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/chronoshq/chronos"
)

const (
	headerRequestID = "X-Request-Id"
	ctxRequestID    = "chronos.request_id"
	maxRequestIDLen = 128
)

// requestID takes the caller's X-Request-Id when it is short and printable
// (so a request can be followed through a proxy), generates one otherwise,
// and echoes it on the response.
func (s *Server) requestID(c *gin.Context) {
	id := c.GetHeader(headerRequestID)
	if !saneRequestID(id) {
		id = newRequestID()
	}
	c.Set(ctxRequestID, id)
	c.Header(headerRequestID, id)
	c.Next()
}

func saneRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] >= 0x7f {
			return false
		}
	}
	return true
}

func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

func requestIDOf(c *gin.Context) string { return c.GetString(ctxRequestID) }

// recovery turns a panic into a 500 envelope and an error log carrying the
// request id and stack. http.ErrAbortHandler is re-raised: it is
// net/http's way of dropping a connection on purpose.
func (s *Server) recovery(c *gin.Context) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if r == nethttp.ErrAbortHandler {
			panic(r)
		}
		s.log.Error("panic serving request", slog.String("request_id", requestIDOf(c)),
			slog.String("method", c.Request.Method), slog.String("path", c.Request.URL.Path),
			slog.String("panic", fmt.Sprint(r)), slog.String("stack", string(debug.Stack())))
		if c.Writer.Written() {
			// Headers are out; the best left is to stop writing.
			c.Abort()
			return
		}
		writeEnvelope(c, nethttp.StatusInternalServerError, &chronos.Error{Code: chronos.EINTERNAL, Message: "internal error"})
	}()
	c.Next()
}

// logRequests logs one line per request. Probes and scrapes log at debug
// level so they do not drown the rest.
func (s *Server) logRequests(c *gin.Context) {
	start := time.Now()
	c.Next()
	d := time.Since(start)
	status := c.Writer.Status()
	route := c.FullPath()
	s.metrics.observeRequest(c.Request.Method, route, status, d)
	level := slog.LevelInfo
	switch {
	case status >= 500 && status != statusClientClosed:
		level = slog.LevelError
	case route == "/healthz" || route == "/readyz" || route == "/metrics":
		level = slog.LevelDebug
	}
	if !s.log.Enabled(c.Request.Context(), level) {
		return
	}
	s.log.LogAttrs(c.Request.Context(), level, "http request",
		slog.String("request_id", requestIDOf(c)),
		slog.String("method", c.Request.Method),
		slog.String("path", c.Request.URL.Path),
		slog.String("route", route),
		slog.Int("status", status),
		slog.Int("bytes", c.Writer.Size()),
		slog.Duration("duration", d),
		slog.String("remote", c.ClientIP()),
		slog.String("key", CallerOf(c).Name),
	)
}

// limitBody caps request bodies at Config.MaxBodyBytes. A declared
// Content-Length over the cap is refused before reading; a body that grows
// past it while streaming fails in decodeJSON (413 too).
func (s *Server) limitBody(c *gin.Context) {
	limit := s.cfg.MaxBodyBytes
	if c.Request.URL.Path == jobBatchPath {
		limit *= batchBodyFactor // up to sql.MaxJobBatch jobs
	}
	if c.Request.ContentLength > limit {
		s.fail(c, tooLarge(limit))
		return
	}
	if c.Request.Body != nil {
		c.Request.Body = nethttp.MaxBytesReader(c.Writer, c.Request.Body, limit)
	}
	c.Next()
}

func tooLarge(limit int64) *chronos.Error {
	return &chronos.Error{Code: chronos.ETOOLARGE,
		Message: fmt.Sprintf("request body is larger than %d bytes", limit),
		Fields:  map[string]string{"body": fmt.Sprintf("must be at most %d bytes", limit)}}
}
