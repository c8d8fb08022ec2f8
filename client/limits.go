package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/chronoshq/chronos"
)

// LimitSettings are what PutLimit sets: nil max_concurrency or rate means
// none of that kind (at least one is required); nil PerSeconds with a rate
// means per second.
type LimitSettings struct {
	MaxConcurrency *int `json:"max_concurrency"`
	Rate           *int `json:"rate"`
	PerSeconds     *int `json:"per_seconds"`
}

func limitPath(key string) string { return "/v1/limits/" + url.PathEscape(key) }

// ListLimits returns every declared limit with its state (in flight,
// tokens left, runs waiting), in key order.
func (c *Client) ListLimits(ctx context.Context) ([]*chronos.Limit, error) {
	var out struct {
		Limits []*chronos.Limit `json:"limits"`
	}
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/limits"}, &out); err != nil {
		return nil, err
	}
	return out.Limits, nil
}

// GetLimit returns one limit with its state.
func (c *Client) GetLimit(ctx context.Context, key string) (*chronos.Limit, error) {
	var l chronos.Limit
	if err := c.do(ctx, request{method: http.MethodGet, path: limitPath(key)}, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// PutLimit creates or replaces the limit key and returns it as stored.
func (c *Client) PutLimit(ctx context.Context, key string, s LimitSettings) (*chronos.Limit, error) {
	var l chronos.Limit
	if err := c.do(ctx, request{method: http.MethodPut, path: limitPath(key), body: s}, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// DeleteLimit deletes a limit; a conflict error while a job names it.
func (c *Client) DeleteLimit(ctx context.Context, key string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: limitPath(key)}, nil)
}
