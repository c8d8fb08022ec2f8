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
	"sync"
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
	secret []byte // the cluster's SIGNING_SECRET, as configured
	// clusterKeys holds the secret's HMAC key (chronos.SigningKey), decoded
	// once rather than per delivery; nil without a secret.
	clusterKeys [][]byte
}

func newExecutor(cfg Config) *executor {
	var keys [][]byte
	if cfg.SigningSecret != "" {
		keys = [][]byte{chronos.SigningKey(cfg.SigningSecret)}
	}
	return &executor{
		clusterKeys: keys,
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
	timeout := jobTimeout(job)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return e.call(ctx, job, run, timeout)
}

// jobTimeout is how long one attempt of job may take.
func jobTimeout(job *chronos.Job) time.Duration {
	if t := job.Timeout(); t > 0 {
		return t
	}
	return chronos.DefaultTimeoutSeconds * time.Second
}

// call is do under a ctx that the caller has already bounded by timeout
// (the job's, see jobTimeout): a worker makes one context per delivery
// serve for both the timeout and its own cancellation.
func (e *executor) call(ctx context.Context, job *chronos.Job, run *chronos.Run, timeout time.Duration) attemptResult {
	res := attemptResult{StartedAt: time.Now()}
	var sent atomic.Bool
	// Writing the headers is where bytes may start to reach the target:
	// from there on the request counts as sent, even if the write fails
	// half way (counting an attempt that did not arrive is safe; not
	// counting one that did is how a run gets delivered without bound).
	// The trace goes into the context the request is built with, so the
	// request is not copied to carry it.
	trace := &httptrace.ClientTrace{
		WroteHeaders: func() { sent.Store(true) },
		WroteRequest: func(httptrace.WroteRequestInfo) { sent.Store(true) },
	}
	trace.WroteHeaderField = func(string, []string) {
		sent.Store(true)
		// The first field written is what counts; net/http allocates
		// the values it passes to this hook for every field after it,
		// so the hook removes itself. Only the goroutine writing the
		// request reads it.
		trace.WroteHeaderField = nil
	}
	req, err := e.request(httptrace.WithClientTrace(ctx, trace), job, run)
	if err != nil {
		res.FinishedAt = time.Now()
		res.Err = err.Error()
		return res
	}
	resp, err := e.client.Do(req)
	res.Sent = sent.Load() || resp != nil
	if err != nil {
		res.FinishedAt = time.Now()
		res.Err = describeError(ctx, err, timeout)
		res.HostFailure = !errors.Is(err, ErrTargetRefused) && !errors.Is(ctx.Err(), context.Canceled)
		return res
	}
	body := bodyBuffers.Get().(*[maxStoredBody + 1]byte)
	lr := &io.LimitedReader{R: resp.Body, N: maxStoredBody}
	stored, readErr := readAll(lr, body[:0])
	// Drain a bounded remainder so the connection goes back to the pool;
	// a larger body costs us the connection, not the worker's time.
	lr.N = maxDrainBody
	_, _ = io.Copy(io.Discard, lr)
	_ = resp.Body.Close()
	res.FinishedAt = time.Now()
	res.StatusCode = resp.StatusCode
	res.Body = sanitizeBody(stored) // a copy: the buffer goes back now
	bodyBuffers.Put(body)
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
	h := req.Header
	n := 6 + len(job.Headers) // User-Agent, Content-Type, the run's three, catch-up or backfill
	if len(e.secret) > 0 || len(job.SigningSecrets) > 0 {
		n += 5 // see sign
	}
	if n > smallHeaders {
		// Sized once rather than grown while the headers are set.
		h = make(http.Header, n)
		req.Header = h
	}
	// Chronos's own headers are stored under their canonical names
	// directly; their values are slices of one array, and the run's
	// numbers and instant one string, rather than an allocation each.
	vals := make([]string, 0, 5)
	set := func(key, v string) {
		vals = append(vals, v)
		h[key] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	set(keyUserAgent, UserAgent)
	if body != nil {
		set(keyContentType, "application/json")
	}
	// The job's headers may override User-Agent and Content-Type; the
	// X-Chronos-* headers below are reserved (Job.Validate refuses them)
	// and set last, so they are always ours.
	for k, v := range job.Headers {
		h.Set(k, v)
	}
	var buf [64]byte
	b := strconv.AppendInt(buf[:0], run.ID, 10)
	idEnd := len(b)
	b = strconv.AppendInt(b, int64(run.AttemptCount), 10)
	attemptEnd := len(b)
	b = run.ScheduledAt.UTC().AppendFormat(b, time.RFC3339Nano)
	nums := string(b)
	set(keyRunID, nums[:idEnd])
	set(keyAttempt, nums[idEnd:attemptEnd])
	set(keyScheduledAt, nums[attemptEnd:])
	if run.CatchUp {
		h[keyCatchUp] = trueValue
	}
	if run.Trigger == chronos.TriggerBackfill {
		h[keyBackfill] = trueValue
	}
	e.sign(h, job, run, body)
	return req, nil
}

// smallHeaders is how many headers fit the map NewRequest makes without
// it growing.
const smallHeaders = 8

// The canonical names of the headers request sets itself: what
// http.Header.Set would store them under.
var (
	keyUserAgent   = http.CanonicalHeaderKey("User-Agent")
	keyContentType = http.CanonicalHeaderKey("Content-Type")
	keyRunID       = http.CanonicalHeaderKey(HeaderRunID)
	keyAttempt     = http.CanonicalHeaderKey(HeaderAttempt)
	keyScheduledAt = http.CanonicalHeaderKey(HeaderScheduledAt)
	keyCatchUp     = http.CanonicalHeaderKey(HeaderCatchUp)
	keyBackfill    = http.CanonicalHeaderKey(HeaderBackfill)
)

// trueValue is the value of the boolean headers. It is shared, so it has
// no room to append to: a caller adding a value gets a new slice.
var trueValue = []string{"true"}

// bodyBuffers hold the stored part of responses while they are read: one
// more byte than is kept, so reading never needs to grow it.
var bodyBuffers = sync.Pool{New: func() any { return new([maxStoredBody + 1]byte) }}

// readAll is io.ReadAll into buf, which has room for all r may return.
func readAll(r io.Reader, buf []byte) ([]byte, error) {
	for {
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return buf, err
		}
		if len(buf) == cap(buf) {
			return buf, nil
		}
	}
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
