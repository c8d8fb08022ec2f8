package reactor

import (
	"context"
	"errors"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/internal/loop"
	"github.com/chronoshq/chronos/sql"
)

// Pruning history. Runs and their attempts live in partitions of
// job_runs and run_attempts (sql/partitions.go): the pruner creates them
// ahead and drops whole partitions past RunRetention. Audit entries and
// idempotency keys are deleted in small batches with a pause between
// them, so deleting never holds long locks or starves the hot path.
const (
	pruneBatch = 5000
	prunePause = 50 * time.Millisecond
)

// pruner keeps the run partitions (created ahead, dropped past
// RunRetention) and deletes audit history older than AuditRetention and
// idempotency keys past their 24 hours.
type pruner struct{ r *Reactor }

func newPruner(r *Reactor) *pruner { return &pruner{r: r} }

func (p *pruner) run(ctx context.Context) {
	loop.Every(ctx, p.r.cfg.PruneInterval, nil, func() {
		p.prune(ctx)
		p.pruneHistory(ctx)
	})
}

// partitionsAhead is how far past now job_runs partitions exist: a width
// and two ticks, so the next range is in place a whole width before it is
// needed, and a leader that misses a tick, or changes hands, still finds it. A run scheduled further ahead (a
// far one-shot) waits in the default partition and moves into its range
// when the range is created.
func (p *pruner) partitionsAhead(width time.Duration) time.Duration {
	return width + 2*p.r.cfg.PruneInterval
}

// prune creates the partitions ahead, then drops those past the
// retention. A busy table (lock not granted within
// sql.PartitionLockTimeout) is tried again at the next tick.
func (p *pruner) prune(ctx context.Context) {
	r := p.r
	width := sql.RunPartitionWidth(r.cfg.RunRetention)
	created, err := r.db.EnsureRunPartitions(ctx, width, p.partitionsAhead(width))
	if len(created) > 0 {
		r.log.Info("created run partitions", "partitions", created, "width", width)
	}
	if err != nil && ctx.Err() == nil {
		p.logErr("create run partitions", err)
	}
	res, err := r.db.PruneRunPartitions(ctx, r.cfg.RunRetention)
	if err != nil && ctx.Err() == nil {
		p.logErr("drop run partitions", err)
	}
	if len(res.Kept) > 0 {
		r.log.Info("run partitions past the retention kept: they hold unfinished runs", "partitions", res.Kept)
	}
	if len(res.Dropped) > 0 || res.Runs > 0 {
		r.log.Info("pruned terminal runs", "partitions", res.Dropped, "runs", res.Runs, "retention", r.cfg.RunRetention)
		r.bus.Publish(chronos.Event{Type: chronos.EventPruned, Instance: r.cfg.Instance, Count: int(res.Runs)})
	}
}

func (p *pruner) logErr(what string, err error) {
	if errors.Is(err, sql.ErrPartitionBusy) {
		p.r.log.Warn(what+": table busy, trying again next tick", "err", err)
		return
	}
	p.r.log.Error(what+" failed", "err", err)
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
