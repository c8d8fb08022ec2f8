package chronos

// BackoffStrategy is how the delay between retries grows.
type BackoffStrategy string

// Backoff strategies.
const (
	BackoffExponential BackoffStrategy = "exponential" // base·2^(n-1), capped, with jitter
	BackoffLinear      BackoffStrategy = "linear"      // base·n, capped
)

// Valid reports whether s is a known strategy.
func (s BackoffStrategy) Valid() bool { return s == BackoffExponential || s == BackoffLinear }

// OverlapPolicy says what happens when an occurrence comes due while an
// earlier run of the same job is still active.
type OverlapPolicy string

// Overlap policies.
const (
	OverlapAllow    OverlapPolicy = "allow"     // materialize regardless
	OverlapSkip     OverlapPolicy = "skip"      // skip (and count) while a run is active
	OverlapQueueOne OverlapPolicy = "queue_one" // at most one waiting run behind the active one
)

// Valid reports whether p is a known policy.
func (p OverlapPolicy) Valid() bool {
	return p == OverlapAllow || p == OverlapSkip || p == OverlapQueueOne
}
