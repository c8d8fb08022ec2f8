package reactor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/chronoshq/chronos"
)

// Limits on what the executor keeps of a response.
const (
	maxStoredBody = 4 << 10  // bytes of the response body stored with the attempt
	maxDrainBody  = 64 << 10 // bytes read past that so the connection can be reused
)

// HeaderCatchUp is set, to "true", on the delivery of a catch-up run: the
// one late request that stands for the occurrences missed while the
// cluster had no leader.
const HeaderCatchUp = "X-Chronos-Catch-Up"

// HeaderBackfill is set, to "true", on the delivery of a backfilled run
// (trigger backfill: POST /v1/jobs/{id}/backfill), so a target can tell a
// past occurrence run late on purpose from its schedule's own.
const HeaderBackfill = "X-Chronos-Backfill"

// executor makes the HTTP call of one attempt. It is safe for concurrent
// use; every call shares one transport.
type executor struct {
	client *http.Client
	secret []byte
}

func newExecutor(cfg Config) *executor {
	return &executor{
		client: &http.Client{
			Transport: newTransport(cfg.WorkerConcurrency, cfg.TargetPolicy()),
			// A redirect is the target's answer, not an instruction: 3xx
			// is recorded as a failure (ticket 02), never followed.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		secret: []byte(cfg.SigningSecret),
	}
}

// close drops the idle connections of the shared transport.
func (e *executor) close() { e.client.CloseIdleConnections() }

// attemptResult is what one HTTP call produced.
type attemptResult struct {
	StatusCode int           // 0 when no response arrived
	Body       string        // truncated, valid UTF-8, no NUL bytes
	Err        string        // "" on success
	RetryAfter time.Duration // from Retry-After on 429/503
	HasRetry   bool          // RetryAfter is set
	// Sent: the request may have reached the target (its writing began).
	// An attempt that was not sent may be handed back uncounted; one that
	// was is an attempt, whatever happens next.
	Sent bool
	// HostFailure: the host failed (no connection, no answer in time, or
	// a 5xx): what its circuit breaker counts (hosts.go). A refused
	// address, a bad request or a shutdown is not the host's doing.
	HostFailure bool
	StartedAt   time.Time
	FinishedAt  time.Time
}

// Success reports whether the attempt succeeded: a 2xx response and
// nothing else.
func (r attemptResult) Success() bool {
	return r.Err == "" && r.StatusCode >= 200 && r.StatusCode < 300
}

// do performs the attempt of run for job under ctx, bounded by the job's
// timeout. It never returns an error: every failure is part of the result,
// the way the run's history records it.
func (e *executor) do(ctx context.Context, job *chronos.Job, run *chronos.Run) attemptResult {
	res := attemptResult{StartedAt: time.Now()}
	timeout := job.Timeout()
	if timeout <= 0 {
		timeout = chronos.DefaultTimeoutSeconds * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	req, err := e.request(ctx, job, run)
	if err != nil {
		res.FinishedAt = time.Now()
		res.Err = err.Error()
		return res
	}
	var sent atomic.Bool
	// Writing the headers is where bytes may start to reach the target:
	// from there on the request counts as sent, even if the write fails
	// half way (counting an attempt that did not arrive is safe; not
	// counting one that did is how a run gets delivered without bound).
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		WroteHeaderField: func(string, []string) { sent.Store(true) },
		WroteHeaders:     func() { sent.Store(true) },
		WroteRequest:     func(httptrace.WroteRequestInfo) { sent.Store(true) },
	}))
	resp, err := e.client.Do(req)
	res.Sent = sent.Load() || resp != nil
	if err != nil {
		res.FinishedAt = time.Now()
		res.Err = describeError(ctx, err, timeout)
		res.HostFailure = !errors.Is(err, ErrTargetRefused) && !errors.Is(ctx.Err(), context.Canceled)
		return res
	}
	stored, readErr := io.ReadAll(io.LimitReader(resp.Body, maxStoredBody))
	// Drain a bounded remainder so the connection goes back to the pool;
	// a larger body costs us the connection, not the worker's time.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrainBody))
	_ = resp.Body.Close()
	res.FinishedAt = time.Now()
	res.StatusCode = resp.StatusCode
	res.Body = sanitizeBody(stored)
	if readErr != nil {
		// The status line is the target's answer; a body cut short is
		// only noted.
		res.Body += "\n[body read error: " + readErr.Error() + "]"
	}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		res.Err = fmt.Sprintf("HTTP %d %s (redirects are not followed; location %q)",
			resp.StatusCode, http.StatusText(resp.StatusCode), resp.Header.Get("Location"))
	default:
		res.Err = fmt.Sprintf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	res.HostFailure = resp.StatusCode >= 500
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		res.RetryAfter, res.HasRetry = parseRetryAfter(resp.Header.Get("Retry-After"), res.FinishedAt)
	}
	return res
}

// request builds the HTTP request of an attempt.
func (e *executor) request(ctx context.Context, job *chronos.Job, run *chronos.Run) (*http.Request, error) {
	var body []byte
	if len(job.Payload) > 0 && !bytes.Equal(bytes.TrimSpace(job.Payload), []byte("null")) {
		body = job.Payload
	}
	method := job.Method
	if method == "" {
		method = http.MethodPost
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, job.TargetURL, rd)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("User-Agent", UserAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	// The job's headers may override User-Agent and Content-Type; the
	// X-Chronos-* headers below are reserved (Job.Validate refuses them)
	// and set last, so they are always ours.
	for k, v := range job.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set(HeaderRunID, strconv.FormatInt(run.ID, 10))
	req.Header.Set(HeaderAttempt, strconv.Itoa(run.AttemptCount))
	req.Header.Set(HeaderScheduledAt, run.ScheduledAt.UTC().Format(time.RFC3339Nano))
	if run.CatchUp {
		req.Header.Set(HeaderCatchUp, "true")
	}
	if run.Trigger == chronos.TriggerBackfill {
		req.Header.Set(HeaderBackfill, "true")
	}
	e.sign(req.Header, job, run, body)
	return req, nil
}

// describeError turns a transport error into the attempt's error text.
func describeError(ctx context.Context, err error, timeout time.Duration) string {
	switch {
	case errors.Is(err, ErrTargetRefused):
		return err.Error()
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Sprintf("timeout after %s", timeout)
	case errors.Is(ctx.Err(), context.Canceled):
		return "cancelled: " + err.Error()
	}
	return err.Error()
}

// sanitizeBody makes a response body storable as Postgres text: valid
// UTF-8 and no NUL bytes.
func sanitizeBody(b []byte) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "")
}
