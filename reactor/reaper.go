package reactor

import (
	"context"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/internal/loop"
)

// reclaimBatch is how many expired leases one db.Reclaim takes back.
const reclaimBatch = 1000

// lockCheckEvery: the overlap lock check runs on the reaper's first tick
// and every lockCheckEvery ticks after (a minute at the default 5 s). It
// is a safety net (the triggers keep the lock right), so it costs the
// database three small queries a minute, not a second.
const lockCheckEvery = 12

// reaper takes back runs whose lease expired: their worker vanished. Now
// and then it checks the overlap lock too (sweepLocks).
type reaper struct{ r *Reactor }

func newReaper(r *Reactor) *reaper { return &reaper{r: r} }

func (p *reaper) run(ctx context.Context) {
	tick := 0
	loop.Every(ctx, p.r.cfg.ReaperInterval, nil, func() {
		p.reap(ctx)
		if tick%lockCheckEvery == 0 {
			p.sweepLocks(ctx)
		}
		tick++
	})
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

// sweepLocks repairs the overlap lock and held runs (sql.SweepRunLocks):
// the triggers keep both right, so a repair means a bug or a hand edit,
// logged and counted in chronos_run_lock_repairs_total.
func (p *reaper) sweepLocks(ctx context.Context) {
	r := p.r
	rep, err := r.db.SweepRunLocks(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Error("overlap lock check failed", "err", err)
		}
		return
	}
	if rep.Total() == 0 {
		return
	}
	r.log.Warn("overlap lock check repaired faults", "orphans", rep.Orphans, "missing", rep.Missing,
		"stalled", rep.Stalled, "allowed", rep.Allowed)
	for _, k := range []struct {
		op string
		n  int
	}{{chronos.LockOrphan, rep.Orphans}, {chronos.LockMissing, rep.Missing},
		{chronos.LockStalled, rep.Stalled}, {chronos.LockAllowed, rep.Allowed}} {
		if k.n > 0 {
			r.bus.Publish(chronos.Event{Type: chronos.EventLocksRepaired, Instance: r.cfg.Instance, Op: k.op, Count: k.n})
		}
	}
}
