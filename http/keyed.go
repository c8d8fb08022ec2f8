package http

import (
	"context"
	nethttp "net/http"

	"github.com/gin-gonic/gin"
)

// The handlers of the routes of what a path names by a key (limits,
// calendars, hosts): the preamble (lookup), the one call to the data layer
// and the answer, in one place for every such route.

// show is a GET of one thing: in reads its key, get finds it, 200 with it.
func show[K, T any](s *Server, in func(*gin.Context) (K, error), get func(context.Context, K) (T, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		if v, ok := lookup(s, c, in, get); ok {
			s.reply(c, nethttp.StatusOK, v)
		}
	}
}

// showAll is a GET of every one of a kind, which takes no query: 200 with
// the list as body wraps it (never null).
func showAll[T, B any](s *Server, list func(context.Context) ([]T, error), body func([]T) B) gin.HandlerFunc {
	return func(c *gin.Context) {
		if vs, ok := lookup(s, c, noQuery, all(list)); ok {
			s.reply(c, nethttp.StatusOK, body(vs))
		}
	}
}

// upsert is the end of a PUT of v: store creates or replaces it, done (if
// any) is told which, and the answer is v, 201 when it was created, 200
// when it was replaced.
func upsert[T any](s *Server, c *gin.Context, v T, store func(context.Context, T) (bool, error), done func(created bool)) {
	created, err := store(c.Request.Context(), v)
	if err != nil {
		s.fail(c, err)
		return
	}
	if done != nil {
		done(created)
	}
	status := nethttp.StatusOK
	if created {
		status = nethttp.StatusCreated
	}
	s.reply(c, status, v)
}

// remove is a DELETE of what in names: 204 once del has deleted it, after
// done (if any) is told the key.
func remove[K any](s *Server, in func(*gin.Context) (K, error), del func(context.Context, K) error, done func(K)) gin.HandlerFunc {
	return func(c *gin.Context) {
		if k, ok := lookup(s, c, in, deleted(del)); ok {
			if done != nil {
				done(k)
			}
			c.Status(nethttp.StatusNoContent)
		}
	}
}

// all adapts a read of every one of a kind to lookup with noQuery. None
// is an empty list, never null, on the wire.
func all[T any](list func(context.Context) ([]T, error)) func(context.Context, struct{}) ([]T, error) {
	return func(ctx context.Context, _ struct{}) ([]T, error) {
		vs, err := list(ctx)
		if vs == nil {
			vs = []T{}
		}
		return vs, err
	}
}

// deleted adapts a delete to lookup: it gives back the key it deleted.
func deleted[K any](del func(context.Context, K) error) func(context.Context, K) (K, error) {
	return func(ctx context.Context, k K) (K, error) { return k, del(ctx, k) }
}
