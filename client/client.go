package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/chronoshq/chronos"
)

// Client calls one Chronos API. It is safe for concurrent use.
type Client struct {
	base *url.URL
	key  string
	http *http.Client
	ua   string
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the http.Client requests go through (default: one
// with a 30 s timeout).
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.ua = ua } }

// New returns a client of the API at baseURL (e.g. http://127.0.0.1:8080)
// that authenticates with key ("" sends no Authorization header).
func New(baseURL, key string, opts ...Option) (*Client, error) {
	if baseURL == "" {
		return nil, errors.New("client: the API URL is empty")
	}
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: API URL %q: want http(s)://host[:port]", baseURL)
	}
	c := &Client{base: u, key: key, http: &http.Client{Timeout: 30 * time.Second}, ua: "chronos-client"}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Error is a failed call: the HTTP status and the API's error (code,
// message, fields). errors.As(err, **chronos.Error) and
// chronos.ErrorCode(err) reach the API's code through Unwrap.
type Error struct {
	Status int
	API    *chronos.Error
}

// Error implements error.
func (e *Error) Error() string { return fmt.Sprintf("%s (HTTP %d)", e.API.Error(), e.Status) }

// Unwrap returns the API's error.
func (e *Error) Unwrap() error { return e.API }

// Code returns the API's error code of err ("" for nil, "internal" when err
// carries none, e.g. a connection refused).
func Code(err error) string { return chronos.ErrorCode(err) }

// request is one call: its method, path (with query), body and headers.
type request struct {
	method string
	path   string
	query  url.Values
	body   any // nil, json.RawMessage/[]byte sent as is, or marshalled
	header http.Header
}

// call does req and returns its answer decoded into a new T (a
// next_cursor of null decodes as "", the last page).
func call[T any](ctx context.Context, c *Client, req request) (*T, error) {
	var v T
	if err := c.do(ctx, req, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// pageQuery adds to q the page size (0: the server's default) and the
// cursor of a paged list ("": its first page), and returns q.
func pageQuery(q url.Values, limit int, cursor string) url.Values {
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	return q
}

// listIn is a GET of path whose answer wraps a list in an object under
// key ({"limits": [...]}).
func listIn[T any](ctx context.Context, c *Client, path, key string) ([]T, error) {
	out, err := call[map[string]json.RawMessage](ctx, c, request{method: http.MethodGet, path: path})
	if err != nil {
		return nil, err
	}
	var list []T
	if raw := (*out)[key]; raw != nil {
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("%s %s: decode answer: %w", http.MethodGet, path, err)
		}
	}
	return list, nil
}

// do sends r and decodes a 2xx JSON answer into out (unless nil). A non-2xx
// answer is an *Error.
func (c *Client) do(ctx context.Context, r request, out any) error {
	u := *c.base
	u.Path = c.base.Path + r.path
	if len(r.query) > 0 {
		u.RawQuery = r.query.Encode()
	}
	var body io.Reader
	switch b := r.body.(type) {
	case nil:
	case json.RawMessage:
		body = bytes.NewReader(b)
	case []byte:
		body = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return fmt.Errorf("%s %s: encode body: %w", r.method, r.path, err)
		}
		body = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u.String(), body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", r.method, r.path, err)
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.ua)
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", r.method, r.path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", r.method, r.path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return apiError(resp.StatusCode, data)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", r.method, r.path, err)
	}
	return nil
}

// apiError decodes the error envelope of a non-2xx answer; an answer that
// is not one (a proxy's HTML page) still yields an *Error with a code
// guessed from the status.
func apiError(status int, body []byte) error {
	var env struct {
		Error *chronos.Error `json:"error"`
	}
	if json.Unmarshal(body, &env) == nil && env.Error != nil && env.Error.Code != "" {
		return &Error{Status: status, API: env.Error}
	}
	msg := strings.TrimSpace(string(body))
	if len(msg) > 200 {
		msg = msg[:200] + "..."
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	return &Error{Status: status, API: &chronos.Error{Code: codeOfStatus(status), Message: msg}}
}

// codeOfStatus maps a status to the API's code for it, for answers that
// carry no envelope.
func codeOfStatus(status int) string {
	if code, ok := statusCodes[status]; ok {
		return code
	}
	return chronos.EINTERNAL
}

// statusCodes are the API's codes of the statuses it answers with.
var statusCodes = map[int]string{
	http.StatusBadRequest:            chronos.EINVALID,
	http.StatusUnprocessableEntity:   chronos.EINVALID,
	http.StatusUnauthorized:          chronos.EUNAUTHORIZED,
	http.StatusForbidden:             chronos.EFORBIDDEN,
	http.StatusNotFound:              chronos.ENOTFOUND,
	http.StatusConflict:              chronos.ECONFLICT,
	http.StatusRequestEntityTooLarge: chronos.ETOOLARGE,
	http.StatusTooManyRequests:       chronos.ERATELIMITED,
	http.StatusServiceUnavailable:    chronos.EUNAVAILABLE,
	http.StatusBadGateway:            chronos.EUNAVAILABLE,
	http.StatusGatewayTimeout:        chronos.EUNAVAILABLE,
}

// CallOption adjusts one request.
type CallOption func(*request)

// WithIdempotencyKey sends an Idempotency-Key header: the server answers a
// repeat within 24 hours as it answered the first and does nothing more.
func WithIdempotencyKey(key string) CallOption {
	return func(r *request) {
		if r.header == nil {
			r.header = http.Header{}
		}
		r.header.Set("Idempotency-Key", key)
	}
}

func (r request) with(opts []CallOption) request {
	for _, o := range opts {
		o(&r)
	}
	return r
}
