package reactor

import (
	"context"
	"time"

	"github.com/chronoshq/chronos"
)

// Intervals of the leader's limit loop.
const (
	// limitReleaseInterval: how often runs held for their limit are
	// released as the rate buckets refill. A completion releases a run
	// for each run it finishes at once; this is the pace of the rest (a
	// slot freed by a release at shutdown, the reaper, a deferral), and
	// so the granularity of a rate limit (a run allowed by a refilled
	// token waits up to this long).
	limitReleaseInterval = 50 * time.Millisecond
	// limitRecountInterval: how often each key's in_flight bound and held
	// hint are set to the runs they bound (sql.RecountLimits).
	limitRecountInterval = time.Minute
)

// limiter is the leader's loop that releases runs held by their limits
// once the limit has room again (sql.ReleaseLimitedRuns) and, now and
// then, sets each key's bounds to its runs, warning of a bound that was
// below them (broken behind the claim's back).
type limiter struct{ r *Reactor }

func newLimiter(r *Reactor) *limiter { return &limiter{r: r} }

// run releases every limitReleaseInterval until ctx ends.
func (l *limiter) run(ctx context.Context) {
	r := l.r
	tick := time.NewTicker(limitReleaseInterval)
	defer tick.Stop()
	recount := time.NewTicker(limitRecountInterval)
	defer recount.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-recount.C:
			fixed, err := r.db.RecountLimits(ctx)
			if err != nil && ctx.Err() == nil {
				r.log.Warn("recount limits failed", "err", err)
			}
			if len(fixed) > 0 {
				r.log.Warn("limit in-flight bounds were below the runs in flight: corrected", "keys", fixed)
			}
		case <-tick.C:
			n, err := r.db.ReleaseLimitedRuns(ctx)
			if err != nil {
				if ctx.Err() == nil {
					r.log.Warn("release limited runs failed", "err", err)
				}
				continue
			}
			if n > 0 {
				r.log.Debug("released runs held by their limits", "count", n)
				r.bus.Publish(chronos.Event{Type: chronos.EventLimitReleased, Instance: r.cfg.Instance, Count: n})
			}
		}
	}
}
