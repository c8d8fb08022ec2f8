package chronos

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Job is a registered webhook: what to call, when (a cron expression xor a
// one-shot run_at) and how to retry. Its JSON form is the wire form of the API.
type Job struct {
	ID                 int64             `json:"id"`
	Name               string            `json:"name"`
	Description        string            `json:"description"`
	Labels             map[string]string `json:"labels"`
	CronExpr           *string           `json:"cron_expr"`
	RunAt              *time.Time        `json:"run_at"`
	Timezone           string            `json:"timezone"`
	TargetURL          string            `json:"target_url"`
	Method             string            `json:"method"`
	Headers            map[string]string `json:"headers"`
	SecretHeaders      []string          `json:"secret_headers"` // masked like Authorization (see secrets.go)
	Payload            json.RawMessage   `json:"payload"`
	TimeoutSeconds     int               `json:"timeout_seconds"`
	MaxRetries         int               `json:"max_retries"`
	Backoff            BackoffStrategy   `json:"backoff"`
	BackoffBaseSeconds float64           `json:"backoff_base_seconds"`
	BackoffMaxSeconds  float64           `json:"backoff_max_seconds"`
	Overlap            OverlapPolicy     `json:"overlap"`
	Enabled            bool              `json:"enabled"`
	SigningSecrets     []SigningSecret   `json:"signing_secrets"` // metadata only; the values are write-only
	NextRunAt          *time.Time        `json:"next_run_at"`
	CreatedAt          time.Time         `json:"created_at"`
	UpdatedAt          time.Time         `json:"updated_at"`
}

// Defaults and limits of job fields.
const (
	DefaultTimeoutSeconds     = 30
	MaxTimeoutSeconds         = 3600
	DefaultMaxRetries         = 3
	MaxMaxRetries             = 100
	DefaultBackoffBaseSeconds = 2
	DefaultBackoffMaxSeconds  = 600
	MaxBackoffSeconds         = 7 * 24 * 3600
	MaxNameLength             = 200
	MaxURLLength              = 2048
	MaxHeaders                = 50
	MaxHeaderValueLength      = 4096
	MaxPayloadBytes           = 64 << 10
)

// Timeout is the per-attempt timeout.
func (j *Job) Timeout() time.Duration { return time.Duration(j.TimeoutSeconds) * time.Second }

// Location returns the job's time zone (UTC when unset or unknown; Validate
// rejects unknown zones before a job is stored).
func (j *Job) Location() *time.Location {
	if j.Timezone == "" {
		return time.UTC
	}
	loc, err := time.LoadLocation(j.Timezone)
	if err != nil {
		return time.UTC
	}
	return loc
}

// ApplyDefaults fills the zero-valued optional fields of a new job.
// Enabled is not touched: the API decides its default (true).
func (j *Job) ApplyDefaults() {
	if j.Timezone == "" {
		j.Timezone = "UTC"
	}
	if j.Method == "" {
		j.Method = http.MethodPost
	}
	j.Method = strings.ToUpper(j.Method)
	if j.Headers == nil {
		j.Headers = map[string]string{}
	}
	if j.Labels == nil {
		j.Labels = map[string]string{}
	}
	if j.SecretHeaders == nil {
		j.SecretHeaders = []string{}
	}
	if j.TimeoutSeconds == 0 {
		j.TimeoutSeconds = DefaultTimeoutSeconds
	}
	if j.Backoff == "" {
		j.Backoff = BackoffExponential
	}
	if j.BackoffBaseSeconds == 0 {
		j.BackoffBaseSeconds = DefaultBackoffBaseSeconds
	}
	if j.BackoffMaxSeconds == 0 {
		j.BackoffMaxSeconds = DefaultBackoffMaxSeconds
		if j.BackoffMaxSeconds < j.BackoffBaseSeconds {
			j.BackoffMaxSeconds = j.BackoffBaseSeconds
		}
	}
	if j.Overlap == "" {
		j.Overlap = OverlapAllow
	}
}

var allowedMethods = map[string]bool{
	http.MethodGet: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodHead: true,
}

// Validate checks every field of a job (after defaults) and returns an
// EINVALID error naming each bad field, or nil.
func (j *Job) Validate() error {
	f := map[string]string{}
	if strings.TrimSpace(j.Name) == "" {
		f["name"] = "is required"
	} else if len(j.Name) > MaxNameLength {
		f["name"] = fmt.Sprintf("must be at most %d bytes", MaxNameLength)
	}
	if len(j.Description) > MaxDescriptionLength {
		f["description"] = fmt.Sprintf("must be at most %d bytes", MaxDescriptionLength)
	}
	validateLabels(j.Labels, f)
	hasCron := j.CronExpr != nil
	switch {
	case hasCron && j.RunAt != nil:
		f["cron_expr"] = "cannot be set together with run_at"
		f["run_at"] = "cannot be set together with cron_expr"
	case !hasCron && j.RunAt == nil:
		f["cron_expr"] = "one of cron_expr or run_at is required"
		f["run_at"] = "one of cron_expr or run_at is required"
	}
	loc, err := LoadTimezone(j.Timezone)
	if err != nil {
		f["timezone"] = err.Error()
	}
	if hasCron {
		if err := ValidateCron(*j.CronExpr); err != nil {
			f["cron_expr"] = err.Error()
		} else if loc != nil {
			if _, err := NextOccurrence(*j.CronExpr, loc, time.Now()); err != nil {
				f["cron_expr"] = err.Error()
			}
		}
	}
	if err := ValidateTargetURL(j.TargetURL); err != nil {
		f["target_url"] = err.Error()
	}
	if !allowedMethods[j.Method] {
		f["method"] = "must be one of GET, POST, PUT, PATCH, DELETE, HEAD"
	}
	if len(j.Headers) > MaxHeaders {
		f["headers"] = fmt.Sprintf("at most %d headers", MaxHeaders)
	}
	for k, v := range j.Headers {
		if !validHeaderName(k) {
			f["headers"] = fmt.Sprintf("invalid header name %q", k)
		} else if strings.HasPrefix(strings.ToLower(k), "x-chronos-") || strings.EqualFold(k, "host") || strings.EqualFold(k, "content-length") {
			f["headers"] = fmt.Sprintf("header %q is reserved", k)
		} else if len(v) > MaxHeaderValueLength || strings.ContainsAny(v, "\r\n\x00") {
			f["headers"] = fmt.Sprintf("invalid value for header %q", k)
		}
	}
	validateSecretHeaders(j.SecretHeaders, f)
	if len(j.Payload) > MaxPayloadBytes {
		f["payload"] = fmt.Sprintf("must be at most %d bytes", MaxPayloadBytes)
	} else if len(j.Payload) > 0 && !json.Valid(j.Payload) {
		f["payload"] = "must be valid JSON"
	}
	if j.TimeoutSeconds < 1 || j.TimeoutSeconds > MaxTimeoutSeconds {
		f["timeout_seconds"] = fmt.Sprintf("must be between 1 and %d", MaxTimeoutSeconds)
	}
	if j.MaxRetries < 0 || j.MaxRetries > MaxMaxRetries {
		f["max_retries"] = fmt.Sprintf("must be between 0 and %d", MaxMaxRetries)
	}
	if !j.Backoff.Valid() {
		f["backoff"] = "must be exponential or linear"
	}
	if !(j.BackoffBaseSeconds > 0 && j.BackoffBaseSeconds <= MaxBackoffSeconds) {
		f["backoff_base_seconds"] = fmt.Sprintf("must be greater than 0 and at most %d", MaxBackoffSeconds)
	}
	if !(j.BackoffMaxSeconds > 0 && j.BackoffMaxSeconds <= MaxBackoffSeconds) {
		f["backoff_max_seconds"] = fmt.Sprintf("must be greater than 0 and at most %d", MaxBackoffSeconds)
	} else if j.BackoffMaxSeconds < j.BackoffBaseSeconds {
		f["backoff_max_seconds"] = "must be at least backoff_base_seconds"
	}
	if !j.Overlap.Valid() {
		f["overlap"] = "must be allow, skip or queue_one"
	}
	if len(f) > 0 {
		return InvalidFields(f)
	}
	return nil
}

// LoadTimezone loads an IANA time zone; "" is UTC.
func LoadTimezone(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	if len(name) > 64 || strings.ContainsAny(name, "\x00\\") || strings.HasPrefix(name, "/") || strings.Contains(name, "..") {
		return nil, fmt.Errorf("unknown time zone %q", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q", name)
	}
	return loc, nil
}

// ValidateTargetURL checks that u is an absolute http(s) URL whose host is
// not the cloud metadata address. Private and loopback targets are refused
// at dial time (see AllowedIP), where DNS cannot sneak around the check.
func ValidateTargetURL(u string) error {
	if u == "" {
		return fmt.Errorf("is required")
	}
	if len(u) > MaxURLLength {
		return fmt.Errorf("must be at most %d bytes", MaxURLLength)
	}
	p, err := url.Parse(u)
	if err != nil {
		return fmt.Errorf("must be a valid URL")
	}
	if p.Scheme != "http" && p.Scheme != "https" {
		return fmt.Errorf("scheme must be http or https")
	}
	if p.Hostname() == "" {
		return fmt.Errorf("must have a host")
	}
	if p.User != nil {
		return fmt.Errorf("must not carry credentials; use headers")
	}
	if ip := net.ParseIP(p.Hostname()); ip != nil && IsMetadataIP(ip) {
		return fmt.Errorf("the metadata address is never allowed")
	}
	return nil
}

func validHeaderName(k string) bool {
	if k == "" || len(k) > 256 {
		return false
	}
	for _, c := range k {
		if c >= 0x7f || c <= ' ' || strings.ContainsRune("()<>@,;:\\\"/[]?={}", c) {
			return false
		}
	}
	return true
}
