package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/chronoshq/chronos"
)

// LimitSettings are what PutLimit sets (the API's body, one type with the
// server's).
type LimitSettings = chronos.LimitSettings

func limitPath(key string) string { return "/v1/limits/" + url.PathEscape(key) }

// ListLimits returns every declared limit with its state (in flight,
// tokens left, runs waiting), in key order.
func (c *Client) ListLimits(ctx context.Context) ([]*chronos.Limit, error) {
	return listIn[*chronos.Limit](ctx, c, "/v1/limits", "limits")
}

// GetLimit returns one limit with its state.
func (c *Client) GetLimit(ctx context.Context, key string) (*chronos.Limit, error) {
	return call[chronos.Limit](ctx, c, request{method: http.MethodGet, path: limitPath(key)})
}

// PutLimit creates or replaces the limit key and returns it as stored.
func (c *Client) PutLimit(ctx context.Context, key string, s LimitSettings) (*chronos.Limit, error) {
	return call[chronos.Limit](ctx, c, request{method: http.MethodPut, path: limitPath(key), body: s})
}

// DeleteLimit deletes a limit; a conflict error while a job names it.
func (c *Client) DeleteLimit(ctx context.Context, key string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: limitPath(key)}, nil)
}
