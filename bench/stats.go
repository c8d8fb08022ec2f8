package bench

import (
	"context"
	"slices"
	"time"
)

// pct holds percentiles of a sample (nearest rank).
type pct struct{ p50, p90, p99, max, min time.Duration }

// percentiles of ds (nearest rank); ds is sorted in place.
func percentiles(ds []time.Duration) pct {
	if len(ds) == 0 {
		return pct{}
	}
	slices.Sort(ds)
	at := func(q float64) time.Duration {
		i := int(q*float64(len(ds))+0.999999) - 1
		return ds[min(max(i, 0), len(ds)-1)]
	}
	return pct{p50: at(0.50), p90: at(0.90), p99: at(0.99), max: ds[len(ds)-1], min: ds[0]}
}

// sleepCtx waits d, or less if ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// changePct is how far last is from first, in percent of first (NaN when
// first is 0 or either is NaN).
func changePct(first, last float64) float64 {
	if first == 0 {
		return nan
	}
	return (last - first) / first * 100
}
