package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/chronoshq/chronos"
)

// RunFilter selects runs. For ListJobRuns only Status, Limit and Cursor
// apply; ListRuns and RedriveRuns take them all.
type RunFilter struct {
	Status  chronos.RunStatus
	JobID   int64
	Trigger chronos.Trigger
	Since   time.Time // scheduled at or after
	Until   time.Time // scheduled before
	Limit   int
	Cursor  string
}

func (f RunFilter) values(withJob bool) url.Values {
	q := url.Values{}
	if f.Status != "" {
		q.Set("status", string(f.Status))
	}
	if withJob && f.JobID != 0 {
		q.Set("job_id", strconv.FormatInt(f.JobID, 10))
	}
	if withJob && f.Trigger != "" {
		q.Set("trigger", string(f.Trigger))
	}
	if withJob && !f.Since.IsZero() {
		q.Set("since", f.Since.UTC().Format(time.RFC3339Nano))
	}
	if withJob && !f.Until.IsZero() {
		q.Set("until", f.Until.UTC().Format(time.RFC3339Nano))
	}
	return pageQuery(q, f.Limit, f.Cursor)
}

// RunPage is one page of runs, newest first; NextCursor is "" on the last.
type RunPage struct {
	Runs       []*chronos.Run `json:"runs"`
	NextCursor string         `json:"next_cursor"`
}

func (c *Client) runPage(ctx context.Context, path string, q url.Values) (*RunPage, error) {
	return call[RunPage](ctx, c, request{method: http.MethodGet, path: path, query: q})
}

// ListJobRuns returns a page of one job's runs (GET /v1/jobs/{id}/runs).
func (c *Client) ListJobRuns(ctx context.Context, jobID int64, f RunFilter) (*RunPage, error) {
	return c.runPage(ctx, jobPath(jobID)+"/runs", f.values(false))
}

// ListRuns returns a page of the runs of every job (GET /v1/runs); with
// Status dead it is the dead-letter queue.
func (c *Client) ListRuns(ctx context.Context, f RunFilter) (*RunPage, error) {
	return c.runPage(ctx, "/v1/runs", f.values(true))
}

// GetRun returns a run with its attempts.
func (c *Client) GetRun(ctx context.Context, id int64) (*chronos.Run, error) {
	return call[chronos.Run](ctx, c, request{method: http.MethodGet, path: runPath(id)})
}

// RedriveRun sends a dead run round again as a new pending run.
func (c *Client) RedriveRun(ctx context.Context, id int64, opts ...CallOption) (*chronos.Run, error) {
	return call[chronos.Run](ctx, c, request{method: http.MethodPost, path: runPath(id) + "/redrive"}.with(opts))
}

// Redriven is the answer of a bulk redrive: the new pending runs, and
// whether more matching dead runs wait for another call.
type Redriven struct {
	Runs  []*chronos.Run `json:"runs"`
	Count int            `json:"count"`
	More  bool           `json:"more"`
}

// RedriveRuns redrives the dead runs matching f, at most f.Limit (the
// server caps it at 1,000) per call (POST /v1/runs/redrive).
func (c *Client) RedriveRuns(ctx context.Context, f RunFilter, opts ...CallOption) (*Redriven, error) {
	f.Cursor = ""
	return call[Redriven](ctx, c, request{method: http.MethodPost, path: "/v1/runs/redrive", query: f.values(true)}.with(opts))
}

func runPath(id int64) string { return "/v1/runs/" + strconv.FormatInt(id, 10) }
