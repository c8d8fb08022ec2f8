package chronos

import "time"

// HostState is what host back-pressure and the circuit breaker (issue 24)
// make of an origin's runs right now.
type HostState string

// Host states.
const (
	// HostOK: runs of the origin go as usual.
	HostOK HostState = "ok"
	// HostDeferred: the host answered 429 or 503 with Retry-After; no run
	// of the origin goes before DeferredUntil.
	HostDeferred HostState = "deferred"
	// HostOpen: the breaker is open after ConsecutiveFailures connection
	// failures or 5xx answers; runs wait until OpenUntil, when one probe
	// goes.
	HostOpen HostState = "open"
	// HostProbing: the breaker's cooldown is over and its probe run is
	// due or in flight; the other runs wait for its answer.
	HostProbing HostState = "probing"
)

// Host is the back-pressure and breaker state of one origin
// ("scheme://host:port", see Origin), shared by the cluster. Only origins
// that ever deferred runs or failed have one.
type Host struct {
	Origin string    `json:"origin"`
	State  HostState `json:"state"`
	// DeferredUntil is the end of the latest Retry-After deferral (it may
	// be past).
	DeferredUntil       *time.Time `json:"deferred_until,omitempty"`
	ConsecutiveFailures int        `json:"consecutive_failures"`
	// OpenedAt and OpenUntil are set while the breaker is open: it opened
	// at OpenedAt, and its probe goes at OpenUntil.
	OpenedAt  *time.Time `json:"opened_at,omitempty"`
	OpenUntil *time.Time `json:"open_until,omitempty"`
	// ProbeRunID is the run chosen as the breaker's probe.
	ProbeRunID *int64 `json:"probe_run_id,omitempty"`
	// Deferrals counts the runs the host deferred; BreakerOpens the times
	// its breaker opened.
	Deferrals      int64     `json:"deferrals"`
	BreakerOpens   int64     `json:"breaker_opens"`
	LastStatusCode *int      `json:"last_status_code,omitempty"`
	LastError      string    `json:"last_error,omitempty"`
	UpdatedAt      time.Time `json:"updated_at"`
}
