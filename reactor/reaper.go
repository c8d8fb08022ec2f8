package reactor

import (
	"context"
	"time"

	"github.com/chronoshq/chronos"
)

// reclaimBatch is how many expired leases one db.Reclaim takes back.
const reclaimBatch = 1000

// reaper takes back runs whose lease expired: their worker vanished.
type reaper struct{ r *Reactor }

func newReaper(r *Reactor) *reaper { return &reaper{r: r} }

func (p *reaper) run(ctx context.Context) {
	tick := time.NewTicker(p.r.cfg.ReaperInterval)
	defer tick.Stop()
	for {
		p.reap(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// reap reclaims batches until one comes back short.
func (p *reaper) reap(ctx context.Context) {
	r := p.r
	for ctx.Err() == nil {
		res, err := r.db.Reclaim(ctx, reclaimBatch)
		if err != nil {
			if ctx.Err() == nil {
				r.log.Error("reclaim expired leases failed", "err", err)
			}
			return
		}
		n := res.Reclaimed + res.Dead
		if n > 0 {
			r.log.Info("reclaimed expired leases", "pending", res.Reclaimed, "dead", res.Dead)
			r.bus.Publish(chronos.Event{Type: chronos.EventReclaimed, Instance: r.cfg.Instance, Count: n})
		}
		if n < reclaimBatch {
			return
		}
	}
}
