package chronos

import (
	"fmt"
	"regexp"
	"time"
)

// Limit is a named concurrency and/or rate limit. Jobs that name it in
// limit_key share it across every instance of the cluster: at most
// MaxConcurrency of their runs are leased or running at once, and at most
// Rate of them are started per PerSeconds (a token bucket holding up to
// Rate tokens). A run over its limit stays pending until it has room. Its
// JSON form is the wire form of the API.
type Limit struct {
	Key            string `json:"key"`
	MaxConcurrency *int   `json:"max_concurrency"` // null: no concurrency limit
	Rate           *int   `json:"rate"`            // null: no rate limit
	PerSeconds     *int   `json:"per_seconds"`     // the rate's window; set with rate

	// State, read-only: runs of the key leased or running now, whole
	// tokens left in the bucket (null without a rate), runs pending and
	// due, and jobs naming the key.
	InFlight   int  `json:"in_flight"`
	TokensLeft *int `json:"tokens_left"`
	Waiting    int  `json:"waiting"`
	Jobs       int  `json:"jobs"`

	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Bounds of a limit's fields.
const (
	MaxLimitKeyLength     = 128
	MaxLimitConcurrency   = 1_000_000
	MaxLimitRate          = 1_000_000
	MaxLimitPerSeconds    = 86_400
	DefaultLimitPerSecond = 1
)

// limitKeyPattern is what a key may look like: it appears in URLs, label
// values of metrics and YAML, so no spaces or exotic characters.
var limitKeyPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$`)

// ValidateLimitKey checks a key's syntax (field names the field to blame).
func ValidateLimitKey(field, key string) error {
	if !limitKeyPattern.MatchString(key) {
		return InvalidFields(map[string]string{field: fmt.Sprintf(
			"must be 1 to %d letters, digits or . _ : / - (starting with a letter or digit)", MaxLimitKeyLength)})
	}
	return nil
}

// Window is the rate's window in seconds: PerSeconds, or a second when
// it is unset (as Validate sets it).
func (l *Limit) Window() int {
	if l.PerSeconds == nil {
		return DefaultLimitPerSecond
	}
	return *l.PerSeconds
}

// Validate checks a limit's settable fields and returns an EINVALID error
// naming each bad one. A rate without per_seconds means per second.
func (l *Limit) Validate() error {
	f := map[string]string{}
	if err := ValidateLimitKey("key", l.Key); err != nil {
		f["key"] = err.(*Error).Fields["key"]
	}
	if l.Rate != nil && l.PerSeconds == nil {
		v := DefaultLimitPerSecond
		l.PerSeconds = &v
	}
	if l.MaxConcurrency == nil && l.Rate == nil {
		f["max_concurrency"] = "one of max_concurrency or rate is required"
		f["rate"] = "one of max_concurrency or rate is required"
	}
	if c := l.MaxConcurrency; c != nil && (*c < 1 || *c > MaxLimitConcurrency) {
		f["max_concurrency"] = fmt.Sprintf("must be between 1 and %d, or null", MaxLimitConcurrency)
	}
	if r := l.Rate; r != nil && (*r < 1 || *r > MaxLimitRate) {
		f["rate"] = fmt.Sprintf("must be between 1 and %d, or null", MaxLimitRate)
	}
	if p := l.PerSeconds; p != nil {
		switch {
		case l.Rate == nil:
			f["per_seconds"] = "requires rate"
		case *p < 1 || *p > MaxLimitPerSeconds:
			f["per_seconds"] = fmt.Sprintf("must be between 1 and %d", MaxLimitPerSeconds)
		}
	}
	if len(f) > 0 {
		return InvalidFields(f)
	}
	return nil
}

// LimitSettings is the body of PUT /v1/limits/{key}, the settings of a
// Limit: nil MaxConcurrency or Rate means none of that kind (at least one
// is required); nil PerSeconds with a rate means per second.
type LimitSettings struct {
	MaxConcurrency *int `json:"max_concurrency"`
	Rate           *int `json:"rate"`
	PerSeconds     *int `json:"per_seconds"`
}
