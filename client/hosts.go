package client

import (
	"context"
	"net/http"

	"github.com/chronoshq/chronos"
)

// ListHosts returns every origin that ever deferred runs or failed, with
// its back-pressure and circuit-breaker state (GET /v1/hosts).
func (c *Client) ListHosts(ctx context.Context) ([]chronos.Host, error) {
	return listIn[chronos.Host](ctx, c, "/v1/hosts", "hosts")
}

// GetHost returns one origin's state (GET /v1/hosts/{origin}); origin may
// be any URL on the host. A host never in trouble is ENOTFOUND.
func (c *Client) GetHost(ctx context.Context, origin string) (*chronos.Host, error) {
	// Normalised here, so no path or query of the URL rides along; the
	// server takes the rest of the path as the origin, slashes and all.
	if o := chronos.Origin(origin); o != "" {
		origin = o
	}
	return call[chronos.Host](ctx, c, request{method: http.MethodGet, path: "/v1/hosts/" + origin})
}
