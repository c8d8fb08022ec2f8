package chronos

import (
	"math"
	"testing"
	"time"
)

func TestBackoffExponentialRange(t *testing.T) {
	t.Parallel()
	base, maxD := 2*time.Second, 600*time.Second
	for n := 1; n <= 12; n++ {
		nominal := base << (n - 1)
		if nominal > maxD {
			nominal = maxD
		}
		lo := time.Duration(float64(nominal) * 0.8)
		seen := map[time.Duration]bool{}
		for i := 0; i < 200; i++ {
			d := BackoffDelay(BackoffExponential, base, maxD, n)
			if d < lo || d > nominal {
				t.Fatalf("n=%d: delay %v outside [%v, %v]", n, d, lo, nominal)
			}
			seen[d] = true
		}
		if len(seen) < 10 {
			t.Fatalf("n=%d: only %d distinct delays in 200 draws: no jitter?", n, len(seen))
		}
	}
}

func TestBackoffExponentialCapAndLargeN(t *testing.T) {
	t.Parallel()
	base, maxD := time.Second, time.Hour
	for _, n := range []int{20, 63, 64, 65, 1000, 1 << 20, math.MaxInt32, math.MaxInt} {
		for i := 0; i < 50; i++ {
			d := BackoffDelay(BackoffExponential, base, maxD, n)
			if d < maxD*8/10 || d > maxD {
				t.Fatalf("n=%d: delay %v outside [0.8·cap, cap]", n, d)
			}
		}
	}
	// The largest base and cap a job may have.
	big := time.Duration(MaxBackoffSeconds) * time.Second
	if d := BackoffDelay(BackoffExponential, big, big, math.MaxInt); d <= 0 || d > big {
		t.Fatalf("max base and cap: %v", d)
	}
}

func TestBackoffLinearExact(t *testing.T) {
	t.Parallel()
	cases := []struct {
		base, max time.Duration
		n         int
		want      time.Duration
	}{
		{5 * time.Second, time.Minute, 1, 5 * time.Second},
		{5 * time.Second, time.Minute, 2, 10 * time.Second},
		{5 * time.Second, time.Minute, 3, 15 * time.Second},
		{5 * time.Second, time.Minute, 12, time.Minute},
		{5 * time.Second, time.Minute, 13, time.Minute},
		{5 * time.Second, time.Minute, math.MaxInt, time.Minute},
		{5 * time.Second, time.Minute, 0, 5 * time.Second},  // n < 1 counts as 1
		{5 * time.Second, time.Minute, -7, 5 * time.Second}, // n < 1 counts as 1
		{1500 * time.Millisecond, time.Hour, 4, 6 * time.Second},
	}
	for _, tc := range cases {
		for i := 0; i < 5; i++ { // no jitter: the same every time
			if got := BackoffDelay(BackoffLinear, tc.base, tc.max, tc.n); got != tc.want {
				t.Fatalf("linear(base=%v, max=%v, n=%d) = %v, want %v", tc.base, tc.max, tc.n, got, tc.want)
			}
		}
	}
}

func TestBackoffEdgeInputs(t *testing.T) {
	t.Parallel()
	if d := BackoffDelay(BackoffLinear, 0, time.Minute, 3); d != 0 {
		t.Fatalf("zero base: %v", d)
	}
	if d := BackoffDelay(BackoffExponential, -time.Second, time.Minute, 3); d != 0 {
		t.Fatalf("negative base: %v", d)
	}
	// No cap given: grows without wrapping around.
	if d := BackoffDelay(BackoffLinear, time.Second, 0, 10); d != 10*time.Second {
		t.Fatalf("uncapped linear: %v", d)
	}
	if d := BackoffDelay(BackoffExponential, time.Second, 0, math.MaxInt); d <= 0 {
		t.Fatalf("uncapped exponential overflowed: %v", d)
	}
	// An unknown strategy is treated as the default, exponential.
	if d := BackoffDelay("", time.Second, time.Minute, 3); d < 3200*time.Millisecond || d > 4*time.Second {
		t.Fatalf("default strategy: %v", d)
	}
}

func TestJobRetryDelay(t *testing.T) {
	t.Parallel()
	j := &Job{Backoff: BackoffLinear, BackoffBaseSeconds: 2.5, BackoffMaxSeconds: 9}
	want := []time.Duration{2500 * time.Millisecond, 5 * time.Second, 7500 * time.Millisecond, 9 * time.Second, 9 * time.Second}
	for i, w := range want {
		if got := j.RetryDelay(i + 1); got != w {
			t.Fatalf("linear RetryDelay(%d) = %v, want %v", i+1, got, w)
		}
	}
	j = &Job{Backoff: BackoffExponential, BackoffBaseSeconds: 1, BackoffMaxSeconds: 600}
	if got := j.RetryDelay(4); got < 6400*time.Millisecond || got > 8*time.Second {
		t.Fatalf("exponential RetryDelay(4) = %v", got)
	}
	j = &Job{Backoff: BackoffExponential, BackoffBaseSeconds: math.Inf(1), BackoffMaxSeconds: math.NaN()}
	if got := j.RetryDelay(3); got < 0 {
		t.Fatalf("non-finite settings gave %v", got)
	}
}
