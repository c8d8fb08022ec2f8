package http

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
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
// The key and its answer are stored in the transaction of the write they
// guard (see idempotent).
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

// idempotencyGuard is the gin context key of a request's *sql.Idempotency.
const idempotencyGuard = "chronos.idempotency"

// idempotencyReplayed marks a request answered from a stored response.
const idempotencyReplayed = "chronos.idempotency.replayed"

// idempotent is the middleware of the routes that honour Idempotency-Key.
//
// The key and the answer are stored by the write itself, in its own
// transaction (sql.WithIdempotency): the handler tells the write how to
// render its answer (setAnswer), so a crash anywhere leaves either the
// write and its answer, or neither. A request that wrote nothing (a
// refusal, 4xx) has its answer stored afterwards; a 5xx stores nothing,
// so the retry runs afresh.
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
	prev, err := s.db.IdempotencyKey(ctx, name, key)
	if err != nil {
		s.fail(c, err)
		return
	}
	if prev != nil {
		replay(c, prev, fp)
		return
	}
	g := &sql.Idempotency{KeyName: name, Key: key, Fingerprint: fp}
	c.Set(idempotencyGuard, g)
	c.Request = c.Request.WithContext(sql.WithIdempotency(ctx, g))
	cw := &captureWriter{ResponseWriter: c.Writer}
	c.Writer = cw
	c.Next()
	if g.Stored() != nil || c.GetBool(idempotencyReplayed) {
		return // stored with the write, or answered from the stored one
	}
	status := cw.Status()
	if status >= 500 || status == statusClientClosed {
		return // nothing stored: the retry runs
	}
	// A refusal (or a handler that guards no write): nothing was written
	// under the key, so its answer can be stored on its own. The outcome
	// is stored even if the client has gone: its retry must find it.
	_, err = s.db.StoreIdempotentResponse(context.WithoutCancel(ctx), name, key, sql.IdempotentResponse{
		Fingerprint: fp, Status: status, ContentType: cw.Header().Get("Content-Type"),
		Location: cw.Header().Get("Location"), Body: cw.buf.Bytes(),
	})
	if err != nil {
		s.log.Error("store idempotent response", slog.String("error", err.Error()))
	}
}

// replay answers a request from the response stored under its key: the
// same response when the request is the same (fp), a 422 when it is not,
// a 409 while an older binary's request under the key is in progress.
func replay(c *gin.Context, prev *sql.IdempotentResponse, fp []byte) {
	c.Set(idempotencyReplayed, true)
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
}

// replayTaken answers a request whose write found its key taken by a
// concurrent request with the same key (which it waited for): it replays
// that request's answer. It reports whether err was such a case.
func replayTaken(c *gin.Context, err error) bool {
	var taken *sql.IdempotencyTakenError
	if !errors.As(err, &taken) {
		return false
	}
	var fp []byte
	if g := guardOf(c); g != nil {
		fp = g.Fingerprint
	}
	replay(c, &taken.Previous, fp)
	return true
}

// guardOf is the request's Idempotency-Key guard, or nil.
func guardOf(c *gin.Context) *sql.Idempotency {
	v, ok := c.Get(idempotencyGuard)
	if !ok {
		return nil
	}
	g, _ := v.(*sql.Idempotency)
	return g
}

// setAnswer tells the write guarded by the request's Idempotency-Key (if
// any) how to render the answer it stores with its commit: answer gets the
// write's results, as the sql method documents them.
func setAnswer(c *gin.Context, answer func(results ...any) (sql.IdempotentResponse, error)) {
	if g := guardOf(c); g != nil {
		g.Answer = answer
	}
}

// jsonAnswer renders a JSON success as it is sent and stored.
func jsonAnswer(status int, v any, location string) (sql.IdempotentResponse, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return sql.IdempotentResponse{}, fmt.Errorf("encode %T response: %w", v, err)
	}
	return sql.IdempotentResponse{Status: status, ContentType: jsonContentType, Location: location, Body: b}, nil
}

// jsonContentType is the Content-Type of every JSON response (as reply
// sends it).
const jsonContentType = "application/json; charset=utf-8"

// writeAnswer sends an answer rendered by jsonAnswer.
func writeAnswer(c *gin.Context, a sql.IdempotentResponse) {
	if a.Location != "" {
		c.Header("Location", a.Location)
	}
	c.Data(a.Status, a.ContentType, a.Body)
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
