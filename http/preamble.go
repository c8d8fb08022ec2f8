package http

import (
	"context"

	"github.com/gin-gonic/gin"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// The preambles of the handlers: what a route reads of its path, query and
// body before it asks the data layer, in one place so that every route
// refuses the same mistakes in the same order (path, then query, then body).

// idAndNoQuery reads :id of a route that takes no query parameters.
func (s *Server) idAndNoQuery(c *gin.Context) (int64, error) {
	id, err := parseID(c)
	if err != nil {
		return 0, err
	}
	if _, err := parseQuery(c); err != nil {
		return 0, err
	}
	return id, nil
}

// idAndQuery reads :id and the query parameters a route allows.
func idAndQuery(c *gin.Context, allowed ...string) (int64, map[string]string, error) {
	id, err := parseID(c)
	if err != nil {
		return 0, nil, err
	}
	q, err := parseQuery(c, allowed...)
	return id, q, err
}

// idNoQueryNoBody reads :id of an action that takes neither query
// parameters nor a body.
func (s *Server) idNoQueryNoBody(c *gin.Context) (int64, error) {
	id, err := s.idAndNoQuery(c)
	if err == nil {
		err = s.noBody(c)
	}
	return id, err
}

// requiredBody decodes the request's body, a JSON object that must be
// there, into dst; what is the complaint about an empty body.
func (s *Server) requiredBody(c *gin.Context, dst any, what string) error {
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	if len(trimSpace(body)) == 0 {
		return invalid("body", what)
	}
	_, err = decodeObject(body, dst)
	return err
}

// noQuery is the preamble of a route with neither path parameters nor
// query parameters.
func noQuery(c *gin.Context) (struct{}, error) {
	_, err := parseQuery(c)
	return struct{}{}, err
}

// withBody is in, the preamble of a route's path and query, then
// requiredBody: what in read, and the body decoded into dst.
func withBody[K any](s *Server, c *gin.Context, in func(*gin.Context) (K, error), dst any, what string) (K, error) {
	k, err := in(c)
	if err == nil {
		err = s.requiredBody(c, dst, what)
	}
	return k, err
}

// optionalBody decodes the request's body, if any, into dst and returns
// how many fields it set (0 for an empty body).
func (s *Server) optionalBody(c *gin.Context, dst any) (int, error) {
	body, err := s.readBody(c)
	if err != nil || len(trimSpace(body)) == 0 {
		return 0, err
	}
	return decodeObject(body, dst)
}

// lookup is the body of a route that reads its key with in (path, then
// query) and hands it to get, the one call to the data layer: what get
// returns, or false once the error is answered.
func lookup[K, T any](s *Server, c *gin.Context, in func(*gin.Context) (K, error), get func(context.Context, K) (T, error)) (T, bool) {
	var v T
	k, err := in(c)
	if err == nil {
		v, err = get(c.Request.Context(), k)
	}
	if err != nil {
		s.fail(c, err)
		return v, false
	}
	return v, true
}

// byID is lookup of one thing by :id, for a route that takes no query.
func byID[T any](s *Server, c *gin.Context, get func(context.Context, int64) (T, error)) (T, bool) {
	return lookup(s, c, s.idAndNoQuery, get)
}

// runAction is POST on a run-creating action of :id (a trigger, a
// redrive): no query, no body, the new run announced on the local bus
// right after the commit and answered 202 (stored under an
// Idempotency-Key).
func (s *Server) runAction(c *gin.Context, create func(ctx context.Context, id int64) (*chronos.Run, error)) {
	id, err := s.idNoQueryNoBody(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	setAnswer(c, func(v ...any) (sql.IdempotentResponse, error) { return runAnswer(v[0].(*chronos.Run)) })
	r, err := create(c.Request.Context(), id)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.announce(r)
	a, err := runAnswer(r)
	if err != nil {
		s.fail(c, err)
		return
	}
	writeAnswer(c, a)
}

// page reads a page of a list: list's error, when the cursor was the
// trouble, is a 400 naming the cursor (cursorError); false once the error
// is answered.
func page[T any](s *Server, c *gin.Context, cursor string, list func(context.Context) (T, string, error)) (T, string, bool) {
	v, next, err := list(c.Request.Context())
	if err != nil {
		s.fail(c, cursorError(err, cursor))
	}
	return v, next, err == nil
}

// newRunList is the body of a page of runs, times in UTC.
func newRunList(runs []*chronos.Run, next string) runList {
	out := runList{Runs: make([]*chronos.Run, 0, len(runs)), NextCursor: cursorPtr(next)}
	for _, r := range runs {
		out.Runs = append(out.Runs, runUTC(r))
	}
	return out
}

// cursorPtr is a page's next_cursor: null on the last page.
func cursorPtr(next string) *string {
	if next == "" {
		return nil
	}
	return &next
}

// create runs store, a write that creates what answer describes (a job,
// a batch of jobs), under the request's Idempotency-Key if any, which
// stores answer's rendering with the commit, and then writes answer;
// noStore keeps a response that shows a secret once out of caches.
func (s *Server) create(c *gin.Context, store func(context.Context) error, answer func() (sql.IdempotentResponse, error), noStore bool) {
	setAnswer(c, func(...any) (sql.IdempotentResponse, error) { return answer() })
	if err := store(c.Request.Context()); err != nil {
		s.fail(c, err)
		return
	}
	a, err := answer()
	if err != nil {
		s.fail(c, err)
		return
	}
	if noStore {
		c.Header("Cache-Control", "no-store")
	}
	writeAnswer(c, a)
}
