package client

import (
	"context"
	"net/http"

	"github.com/chronoshq/chronos"
)

// Backfill asks for a run of each occurrence of a cron job's schedule in
// [r.From, r.To) that has none (POST /v1/jobs/{id}/backfill); with
// r.DryRun, only the list. WithIdempotencyKey makes a retry safe (a repeat
// of the range is safe anyway: an occurrence never gets a second run).
func (c *Client) Backfill(ctx context.Context, id int64, r chronos.BackfillRequest, opts ...CallOption) (*chronos.Backfill, error) {
	var b chronos.Backfill
	if err := c.do(ctx, request{method: http.MethodPost, path: jobPath(id) + "/backfill", body: r}.with(opts), &b); err != nil {
		return nil, err
	}
	return &b, nil
}
