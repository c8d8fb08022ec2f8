package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/chronoshq/chronos"
)

// MaxJobBatch is the most jobs one CreateJobs call takes (the server's
// limit for POST /v1/jobs/batch).
const MaxJobBatch = 1000

// CreateJobs creates up to MaxJobBatch jobs, each from the Set fields of
// its spec, all or nothing (POST /v1/jobs/batch). The answer lists the
// created jobs in the order given. A refusal is an *Error whose fields name
// each failing job as "jobs[i].field"; then nothing was created.
func (c *Client) CreateJobs(ctx context.Context, specs []*chronos.JobUpdate, opts ...CallOption) ([]*CreatedJob, error) {
	bodies := make([]json.RawMessage, len(specs))
	for i, s := range specs {
		b, err := EncodeUpdate(s)
		if err != nil {
			return nil, fmt.Errorf("job %d: %w", i, err)
		}
		bodies[i] = b
	}
	return c.CreateJobsJSON(ctx, bodies, opts...)
}

// CreateJobsJSON is CreateJobs with each job a JSON object in the wire
// form of POST /v1/jobs, sent as it is.
func (c *Client) CreateJobsJSON(ctx context.Context, jobs []json.RawMessage, opts ...CallOption) ([]*CreatedJob, error) {
	var out struct {
		Jobs []*CreatedJob `json:"jobs"`
	}
	body := struct {
		Jobs []json.RawMessage `json:"jobs"`
	}{jobs}
	if err := c.do(ctx, request{method: http.MethodPost, path: "/v1/jobs/batch", body: body}.with(opts), &out); err != nil {
		return nil, err
	}
	if len(out.Jobs) != len(jobs) {
		return nil, fmt.Errorf("POST /v1/jobs/batch: %d jobs in the answer for %d sent", len(out.Jobs), len(jobs))
	}
	return out.Jobs, nil
}
