package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"
	"strconv"
	"time"

	"github.com/chronoshq/chronos"
)

// newAPIClient is the HTTP client the bench calls the API with: keep-alive
// connections, enough of them idle for every concurrent client.
func newAPIClient() *nethttp.Client {
	return &nethttp.Client{Timeout: time.Minute, Transport: &nethttp.Transport{
		MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute,
	}}
}

// createJob creates a job through the first instance's API and returns it.
func (e *env) createJob(ctx context.Context, j map[string]any) (*chronos.Job, error) {
	var out chronos.Job
	if err := e.api(ctx, "POST", "/v1/jobs", j, nethttp.StatusCreated, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// api makes one API call to the first instance and decodes the answer.
func (e *env) api(ctx context.Context, method, path string, body any, want int, out any) error {
	return e.apiAt(ctx, e.insts[0].url(), method, path, body, want, out)
}

// apiAt makes one API call to the instance at base (a json.RawMessage
// body is sent as it is, anything else encoded) and decodes the
// answer into out (nil: the body is read and dropped).
func (e *env) apiAt(ctx context.Context, base, method, path string, body any, want int, out any) error {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case json.RawMessage:
		rd = bytes.NewReader(b) // sent as it is: encoding would check and compact it again
	default:
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := nethttp.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: read: %w", method, path, err)
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: status %d: %s", method, path, resp.StatusCode, bytes.TrimSpace(raw))
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("%s %s: decode: %w", method, path, err)
		}
	}
	return nil
}

// trigger posts one manual trigger to instance 0 and returns the new run's id.
func (e *env) trigger(ctx context.Context, jobID int64) (int64, error) {
	var run chronos.Run
	if err := e.api(ctx, "POST", "/v1/jobs/"+strconv.FormatInt(jobID, 10)+"/trigger", nil, 202, &run); err != nil {
		return 0, err
	}
	return run.ID, nil
}

// get fetches a URL and checks for 200.
func (e *env) get(ctx context.Context, u string) error {
	req, err := nethttp.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return err
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return fmt.Errorf("GET %s: read: %w", u, err)
	}
	if resp.StatusCode != nethttp.StatusOK {
		return fmt.Errorf("GET %s: status %d", u, resp.StatusCode)
	}
	return nil
}

// farFuture is a one-shot job's run_at that never comes during a bench:
// the job exists only to be triggered, or to own inserted runs.
func farFuture() string { return time.Now().AddDate(10, 0, 0).UTC().Format(time.RFC3339) }
