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

// BackoffDelay computes the delay before retry n (n >= 1).
// Exponential jitter takes up to 20% off the delay, so retries of many runs
// that failed together spread out, and the cap is never exceeded.
func BackoffDelay(s BackoffStrategy, base, max time.Duration, n int) time.Duration {
	if n < 1 {
		n = 1
	}
	var d float64
	switch s {
	case BackoffLinear:
		d = float64(base) * float64(n)
	default:
		d = float64(base) * math.Pow(2, float64(n-1))
	}
	if d > float64(max) || math.IsInf(d, 0) || math.IsNaN(d) {
		d = float64(max)
	}
	if s != BackoffLinear {
		d -= d * 0.2 * rand.Float64()
	}
	return time.Duration(d)
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
