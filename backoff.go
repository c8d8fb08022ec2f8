package chronos

import (
	"math"
	"math/rand/v2"
	"time"
)

// RetryDelay is the delay before retry number n (n = 1 for the retry after
// the first failed attempt) under the job's backoff policy:
// exponential is base·2^(n-1), capped at max, with jitter; linear is
// base·n, capped at max.
func (j *Job) RetryDelay(n int) time.Duration {
	return BackoffDelay(j.Backoff, seconds(j.BackoffBaseSeconds), seconds(j.BackoffMaxSeconds), n)
}

// BackoffDelay computes the delay before retry n (n < 1 counts as 1).
//
// Exponential (the default for any strategy but linear) is base·2^(n-1)
// capped at max, then jitter takes up to 20% off, so retries of many runs
// that failed together spread out and the cap is never exceeded. Linear is
// base·n capped at max, exactly, without jitter, so its spacing is
// predictable. The arithmetic is done in float64, where a large n reaches
// +Inf instead of wrapping around, and the result is clamped to [0, max];
// a non-positive max means no cap beyond the largest Duration.
func BackoffDelay(s BackoffStrategy, base, max time.Duration, n int) time.Duration {
	if n < 1 {
		n = 1
	}
	if base <= 0 {
		return 0
	}
	limit := float64(math.MaxInt64)
	if max > 0 {
		limit = float64(max)
	}
	var d float64
	switch s {
	case BackoffLinear:
		d = float64(base) * float64(n)
	default:
		// Ldexp is exact and saturates to +Inf for a huge exponent.
		d = math.Ldexp(float64(base), min(n-1, 2048))
	}
	if !(d <= limit) { // also catches +Inf and NaN
		d = limit
	}
	if s != BackoffLinear {
		d -= d * 0.2 * rand.Float64()
	}
	if d >= float64(math.MaxInt64) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(d)
}

func seconds(s float64) time.Duration {
	d := s * float64(time.Second)
	if !(d < float64(math.MaxInt64)) {
		if math.IsNaN(d) {
			return 0
		}
		return time.Duration(math.MaxInt64)
	}
	if d < 0 {
		return 0
	}
	return time.Duration(d)
}
