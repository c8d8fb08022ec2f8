package http

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"log/slog"
	nethttp "net/http"

	"github.com/gin-gonic/gin"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// Idempotency-Key on the POSTs that create something (a job, a run): a
// repeat within sql.IdempotencyTTL (24 h) gets the first response, status
// and body, and does nothing; the same key with another request (method,
// path, query or body) is a 422. Keys are scoped per API key name. A
// request that failed with a 5xx does not keep its key: the retry runs.
const (
	idempotencyHeader   = "Idempotency-Key"
	replayedHeader      = "Idempotent-Replayed"
	maxIdempotencyKey   = 255
	codeIdempotencyUsed = "idempotency_key_reused"
	codeIdempotencyBusy = "idempotency_key_in_progress"
)

// captureWriter keeps a copy of what a handler writes.
type captureWriter struct {
	gin.ResponseWriter
	buf bytes.Buffer
}

func (w *captureWriter) Write(b []byte) (int, error) {
	w.buf.Write(b)
	return w.ResponseWriter.Write(b)
}

func (w *captureWriter) WriteString(s string) (int, error) {
	w.buf.WriteString(s)
	return w.ResponseWriter.WriteString(s)
}

// idempotent is the middleware of the routes that honour Idempotency-Key.
func (s *Server) idempotent(c *gin.Context) {
	key := c.GetHeader(idempotencyHeader)
	if key == "" {
		c.Next()
		return
	}
	if len(key) > maxIdempotencyKey || !printableASCII(key) {
		s.fail(c, invalid(idempotencyHeader, "must be 1 to 255 printable ASCII characters"))
		return
	}
	body, err := s.readBody(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Request.Body = io.NopCloser(bytes.NewReader(body))
	h := sha256.New()
	h.Write([]byte(c.Request.Method + " " + c.Request.URL.Path + "?" + c.Request.URL.RawQuery + "\n"))
	h.Write(canonicalBody(body))
	fp := h.Sum(nil)

	ctx := c.Request.Context()
	name := CallerOf(c).Name
	prev, err := s.db.ClaimIdempotencyKey(ctx, name, key, fp)
	if err != nil {
		s.fail(c, err)
		return
	}
	if prev != nil {
		switch {
		case !bytes.Equal(prev.Fingerprint, fp):
			writeEnvelope(c, nethttp.StatusUnprocessableEntity, &chronos.Error{Code: codeIdempotencyUsed,
				Message: "this Idempotency-Key was used with a different request in the last 24 hours",
				Fields:  map[string]string{idempotencyHeader: "was used with a different request"}})
		case prev.Status == 0:
			c.Header("Retry-After", "1")
			writeEnvelope(c, nethttp.StatusConflict, &chronos.Error{Code: codeIdempotencyBusy,
				Message: "a request with this Idempotency-Key is still in progress; retry shortly"})
		default:
			c.Header(replayedHeader, "true")
			if prev.Location != "" {
				c.Header("Location", prev.Location)
			}
			c.Data(prev.Status, prev.ContentType, prev.Body)
			c.Abort()
		}
		return
	}

	cw := &captureWriter{ResponseWriter: c.Writer}
	c.Writer = cw
	c.Next()
	// The outcome is stored even if the client has gone: its retry must
	// find it.
	bg := context.WithoutCancel(ctx)
	status := cw.Status()
	if status >= 500 || status == statusClientClosed {
		if err := s.db.ReleaseIdempotencyKey(bg, name, key); err != nil {
			s.log.Error("release idempotency key", slog.String("error", err.Error()))
		}
		return
	}
	err = s.db.FinishIdempotencyKey(bg, name, key, sql.IdempotentResponse{
		Status: status, ContentType: cw.Header().Get("Content-Type"), Location: cw.Header().Get("Location"), Body: cw.buf.Bytes(),
	})
	if err != nil {
		s.log.Error("store idempotent response", slog.String("error", err.Error()))
	}
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// canonicalBody is the body as the fingerprint sees it: JSON without
// insignificant white space, and an empty object the same as no body
// (which the action endpoints take to mean the same).
func canonicalBody(body []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, body) != nil {
		return bytes.TrimSpace(body)
	}
	if buf.String() == "{}" {
		return nil
	}
	return buf.Bytes()
}
