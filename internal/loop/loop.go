// Package loop is the periodic loop of Chronos's background work: the
// leader's materializer, reaper, pruner, queue stats and planner
// statistics, and the samplers of the bench and of the fault suite.
package loop

import (
	"context"
	"time"
)

// Every runs f at once and then again each interval, or as soon as wake
// fires (nil: never), until ctx ends. A pass that overruns the interval
// is followed by the next at once, never by a backlog.
func Every(ctx context.Context, interval time.Duration, wake <-chan struct{}, f func()) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		f()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-wake:
		}
	}
}
