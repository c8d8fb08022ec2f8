package reactor

import (
	"context"
	"time"

	"github.com/chronoshq/chronos"
)

// Pruning: small batches with a pause between them, so deleting history
// never holds long locks or starves the hot path.
// A batch of 5,000 keeps up with thousands of runs finishing per second
// (a minute's worth of 3,000 runs/s is 36 batches) while each DELETE stays
// a short transaction.
const (
	pruneBatch = 5000
	prunePause = 50 * time.Millisecond
)

// pruner deletes terminal runs older than RunRetention, audit history
// older than AuditRetention and idempotency keys past their 24 hours.
type pruner struct{ r *Reactor }

func newPruner(r *Reactor) *pruner { return &pruner{r: r} }

func (p *pruner) run(ctx context.Context) {
	tick := time.NewTicker(p.r.cfg.PruneInterval)
	defer tick.Stop()
	for {
		p.prune(ctx)
		p.pruneHistory(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// prune deletes batches until one comes back short.
func (p *pruner) prune(ctx context.Context) {
	r := p.r
	total := 0
	defer func() {
		if total > 0 {
			r.log.Info("pruned terminal runs", "count", total, "retention", r.cfg.RunRetention)
			r.bus.Publish(chronos.Event{Type: chronos.EventPruned, Instance: r.cfg.Instance, Count: total})
		}
	}()
	for ctx.Err() == nil {
		n, err := r.db.Prune(ctx, r.cfg.RunRetention, pruneBatch)
		if err != nil {
			if ctx.Err() == nil {
				r.log.Error("prune terminal runs failed", "err", err)
			}
			return
		}
		total += n
		if n < pruneBatch {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(prunePause):
		}
	}
}

// pruneHistory deletes expired audit entries and idempotency keys, batch
// by batch like prune.
func (p *pruner) pruneHistory(ctx context.Context) {
	r := p.r
	steps := []struct {
		what string
		del  func() (int, error)
	}{
		{"audit history entries", func() (int, error) { return r.db.PruneAudit(ctx, r.cfg.AuditRetention, pruneBatch) }},
		{"idempotency keys", func() (int, error) { return r.db.PruneIdempotencyKeys(ctx, pruneBatch) }},
	}
	for _, s := range steps {
		total := 0
		for ctx.Err() == nil {
			n, err := s.del()
			if err != nil {
				if ctx.Err() == nil {
					r.log.Error("prune "+s.what+" failed", "err", err)
				}
				break
			}
			total += n
			if n < pruneBatch {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(prunePause):
			}
		}
		if total > 0 {
			r.log.Info("pruned "+s.what, "count", total)
		}
	}
}
