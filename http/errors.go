package http

import (
	"context"
	"errors"
	"log/slog"
	nethttp "net/http"

	"github.com/gin-gonic/gin"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// envelope is the JSON body of every error response.
type envelope struct {
	Error *chronos.Error `json:"error"`
}

// statusOfCode is the HTTP status of each application error code; a code
// not here is a bug, answered 500.
var statusOfCode = map[string]int{
	chronos.EINVALID:      nethttp.StatusBadRequest,
	chronos.ENOTFOUND:     nethttp.StatusNotFound,
	chronos.ECONFLICT:     nethttp.StatusConflict,
	chronos.EUNAUTHORIZED: nethttp.StatusUnauthorized,
	chronos.EFORBIDDEN:    nethttp.StatusForbidden,
	chronos.ETOOLARGE:     nethttp.StatusRequestEntityTooLarge,
	chronos.ERATELIMITED:  nethttp.StatusTooManyRequests,
	chronos.EUNAVAILABLE:  nethttp.StatusServiceUnavailable,
}

// statusOf maps an application error code to its HTTP status.
func statusOf(code string) int {
	if status, ok := statusOfCode[code]; ok {
		return status
	}
	return nethttp.StatusInternalServerError
}

// statusClientClosed is what the log records when the client went away
// before the answer was ready (nginx's convention); the client never sees
// it.
const statusClientClosed = 499

// fail writes err as the JSON error envelope and aborts the chain.
// Application errors keep their code, message and fields; anything else is
// a bug: logged with the request id, answered "internal error" without
// detail.
func (s *Server) fail(c *gin.Context, err error) {
	if replayTaken(c, err) {
		return // a concurrent request with the same Idempotency-Key wrote first
	}
	var e *chronos.Error
	if errors.As(err, &e) && statusOf(e.Code) != nethttp.StatusInternalServerError {
		writeEnvelope(c, statusOf(e.Code), e)
		return
	}
	if ctxErr := c.Request.Context().Err(); ctxErr != nil && errors.Is(err, context.Canceled) {
		// The client hung up: not a bug, and nobody is there to read a 500.
		s.log.Info("request abandoned by client", slog.String("request_id", requestIDOf(c)), slog.String("error", err.Error()))
		c.AbortWithStatus(statusClientClosed)
		return
	}
	if sql.Unavailable(err) {
		// The database is unreachable: not a bug, and worth a retry.
		s.log.Warn("database unavailable", slog.String("request_id", requestIDOf(c)),
			slog.String("method", c.Request.Method), slog.String("path", c.Request.URL.Path), slog.String("error", err.Error()))
		c.Header("Retry-After", "1")
		writeEnvelope(c, nethttp.StatusServiceUnavailable, &chronos.Error{Code: chronos.EUNAVAILABLE, Message: "database unavailable, retry shortly"})
		return
	}
	s.log.Error("internal error", slog.String("request_id", requestIDOf(c)),
		slog.String("method", c.Request.Method), slog.String("path", c.Request.URL.Path), slog.String("error", err.Error()))
	writeEnvelope(c, nethttp.StatusInternalServerError, &chronos.Error{Code: chronos.EINTERNAL, Message: "internal error"})
}

// writeEnvelope writes an error body with status and aborts the chain.
func writeEnvelope(c *gin.Context, status int, e *chronos.Error) {
	c.Header("Cache-Control", "no-store")
	c.AbortWithStatusJSON(status, envelope{Error: e})
}

// invalid is a 400 naming one field.
func invalid(field, reason string) *chronos.Error {
	return chronos.InvalidFields(map[string]string{field: reason})
}
