package chronos

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
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

	// Scheduling policies (see policy_schedule.go and timetable.go).
	StartsAt                *time.Time    `json:"starts_at"`                 // cron jobs: no occurrence before
	EndsAt                  *time.Time    `json:"ends_at"`                   // cron jobs: no occurrence after
	Misfire                 MisfirePolicy `json:"misfire"`                   // one (default), none, all
	StartingDeadlineSeconds *int          `json:"starting_deadline_seconds"` // null: no deadline
	JitterSeconds           int           `json:"jitter_seconds"`            // 0: none
	Exclude                 []DateRange   `json:"exclude"`                   // cron jobs: dates that never fire
	State                   JobState      `json:"state"`                     // derived: scheduled, paused, finished

	// Calendars (see calendar.go): the named calendars whose dates the
	// job's occurrences avoid, and what it does with an occurrence on one.
	Calendars      []string       `json:"calendars"`
	CalendarPolicy CalendarPolicy `json:"calendar_policy"`
	// calendarDays are the calendars compiled (ResolveCalendars); the
	// store attaches them wherever it builds the job's schedule.
	calendarDays      []*CalendarDays
	calendarsResolved bool

	// OnDeadURL, when set, receives a signed alert each time a run of the
	// job goes dead (see DeadRunAlert); nil: none.
	OnDeadURL *string `json:"on_dead_url"`

	// LimitKey names the Limit the job's runs share with every other job
	// naming it (see limit.go); nil: none.
	LimitKey *string `json:"limit_key"`
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
	// MaxPayloadDepth bounds the nesting of a payload: every job response
	// carries it, a few levels down, and common JSON parsers refuse deep
	// nesting (Go's at 10000 levels, serde_json's at 128 by default).
	MaxPayloadDepth = 100
	// MinYear and MaxYear bound the UTC year of every time a job holds:
	// RFC 3339, and so the API's JSON, cannot write a year past 9999, and
	// Go's year 0 is Postgres' 1 BC.
	MinYear = 1
	MaxYear = 9999
)

// Timeout is the per-attempt timeout.
func (j *Job) Timeout() time.Duration { return time.Duration(j.TimeoutSeconds) * time.Second }

// Location returns the job's time zone (UTC when unset or not an IANA
// zone, so that no instance reads a schedule in its own local time;
// Validate rejects such zones before a job is stored).
func (j *Job) Location() *time.Location {
	loc, err := LoadTimezone(j.Timezone)
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
	j.applyPolicyDefaults()
	j.normalizeCalendars()
}

var allowedMethods = map[string]bool{
	http.MethodGet: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodHead: true,
}

// Validate checks every field of a job (after defaults) and returns an
// EINVALID error naming each bad field, or nil. It does not look at the
// clock: a cron expression is checked for syntax only, so a stored job
// whose schedule has ended (a year-bounded expression) stays valid and can
// be paused, renamed or re-enabled. Whether the schedule fires again is
// ValidateSchedule's question, asked at create and when cron_expr changes.
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
	if j.RunAt != nil && f["run_at"] == "" {
		if err := checkYear(*j.RunAt); err != nil {
			f["run_at"] = err.Error()
		}
	}
	if _, err := LoadTimezone(j.Timezone); err != nil {
		f["timezone"] = err.Error()
	}
	if hasCron {
		if err := ValidateCronSyntax(*j.CronExpr); err != nil {
			f["cron_expr"] = err.Error()
		}
	}
	if err := ValidateTargetURL(j.TargetURL); err != nil {
		f["target_url"] = err.Error()
	}
	if j.OnDeadURL != nil {
		// The same rules as target_url: the alert goes out through the
		// same transport, under the same address policy.
		if err := ValidateTargetURL(*j.OnDeadURL); err != nil {
			f["on_dead_url"] = err.Error()
		}
	}
	if j.LimitKey != nil {
		if err := ValidateLimitKey("limit_key", *j.LimitKey); err != nil {
			f["limit_key"] = err.(*Error).Fields["limit_key"]
		}
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
		} else if len(v) > MaxHeaderValueLength || !validHeaderValue(v) {
			f["headers"] = fmt.Sprintf("invalid value for header %q", k)
		}
	}
	validateSecretHeaders(j.SecretHeaders, f)
	if len(j.Payload) > MaxPayloadBytes {
		f["payload"] = fmt.Sprintf("must be at most %d bytes", MaxPayloadBytes)
	} else if len(j.Payload) > 0 && !json.Valid(j.Payload) {
		f["payload"] = "must be valid JSON"
	} else if jsonDepth(j.Payload) > MaxPayloadDepth {
		f["payload"] = fmt.Sprintf("must nest at most %d levels deep", MaxPayloadDepth)
	} else if !storableEscapes(j.Payload) {
		f["payload"] = `must not contain \u0000 or a \u escape of half a surrogate pair: Postgres cannot store them`
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
	j.validatePolicies(f)
	j.validateCalendars(f)
	if len(f) > 0 {
		return InvalidFields(f)
	}
	return nil
}

// ValidateSchedule checks that a cron job fires after now, read in its
// time zone, and returns an EINVALID error naming cron_expr when it never
// does (e.g. "0 0 30 2 *", or a year that has passed). Ask it at create
// and when an update changes cron_expr (CronExprChanged), after Validate:
// a job whose unchanged schedule has ended stays updatable. One-shots
// always pass: a run_at in the past runs at once.
func (j *Job) ValidateSchedule(now time.Time) error {
	if j.CronExpr == nil {
		return nil
	}
	if _, err := NextOccurrence(*j.CronExpr, j.Location(), now); err != nil {
		if errors.Is(err, ErrNeverFires) {
			return InvalidFields(map[string]string{"cron_expr": ErrNeverFires.Error() + " again"})
		}
		return InvalidFields(map[string]string{"cron_expr": err.Error()})
	}
	return j.validateWindow(now) // ends_at, exclude
}

// CronExprChanged reports whether an update gave a job a new cron
// expression (a different one, or one where it had none): the case in
// which ValidateSchedule must hold. Sending the stored expression back is
// no change.
func CronExprChanged(before, after *string) bool {
	return after != nil && (before == nil || *before != *after)
}

// jsonDepth returns how deep arrays and objects nest in b, valid JSON.
func jsonDepth(b []byte) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for _, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

// checkYear refuses a time that cannot be written back as RFC 3339 in UTC.
func checkYear(t time.Time) error {
	if y := t.UTC().Year(); y < MinYear || y > MaxYear {
		return fmt.Errorf("must be between years %d and %d in UTC (this is year %d in UTC)", MinYear, MaxYear, y)
	}
	return nil
}

// LoadTimezone loads an IANA time zone by its name ("Europe/Berlin",
// "UTC"); "" is UTC. Names that do not denote one fixed zone everywhere
// are refused: "Local" and "localtime" follow each instance's TZ, and
// the zoneinfo directory's other entries (posixrules, posix/..., right/...
// with leap seconds, zone.tab) are not zone names.
func LoadTimezone(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	if !ianaName(name) {
		if strings.EqualFold(name, "Local") || strings.EqualFold(name, "localtime") {
			return nil, fmt.Errorf("%q follows each instance's own time zone: use an IANA time zone name such as \"Europe/Berlin\", or \"UTC\"", name)
		}
		return nil, fmt.Errorf("unknown time zone %q: use an IANA time zone name such as \"Europe/Berlin\", or \"UTC\"", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q: use an IANA time zone name such as \"Europe/Berlin\", or \"UTC\"", name)
	}
	return loc, nil
}

// ianaName reports whether name has the form of an IANA zone name: parts
// separated by single slashes, each starting with an upper-case ASCII
// letter followed by letters, digits, '_', '-' or '+' ("Etc/GMT+5",
// "America/Port-au-Prince"), and is not "Local", which time.LoadLocation
// takes for the machine's zone. Every zone of the database has this form;
// the other entries of a zoneinfo directory do not.
func ianaName(name string) bool {
	if len(name) > 64 || name == "Local" {
		return false
	}
	for _, part := range strings.Split(name, "/") {
		if part == "" || part[0] < 'A' || part[0] > 'Z' {
			return false
		}
		for _, c := range part[1:] {
			ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '+'
			if !ok {
				return false
			}
		}
	}
	// On a case-insensitive file system "LOCALTIME" or "Posix/..." would
	// still find those files.
	first, _, _ := strings.Cut(strings.ToLower(name), "/")
	switch first {
	case "local", "localtime", "posixrules", "posix", "right":
		return false
	}
	return true
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
	// The same words as the address policy's (TargetPolicy.CheckURL), so a
	// refused metadata address reads alike at create and at PATCH, whatever
	// the field and whichever check saw it first.
	if a, err := netip.ParseAddr(p.Hostname()); err == nil {
		if e := Metadata(a); e != nil {
			return e
		}
	}
	return nil
}

// validHeaderValue refuses the control characters (all but tab, and DEL)
// that net/http will not send: a job holding one could never be delivered.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
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
