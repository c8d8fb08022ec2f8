package reactor

import (
	"context"
	"time"
)

// every runs f at once and then again each interval, or as soon as wake
// fires (nil: never), until ctx ends: the loop of the leader's periodic
// work (materializer, reaper, pruner, queue stats). A pass that overruns
// the interval is followed by the next at once, never by a backlog.
func every(ctx context.Context, interval time.Duration, wake <-chan struct{}, f func()) {
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
