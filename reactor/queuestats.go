package reactor

import (
	"context"

	"github.com/chronoshq/chronos/internal/loop"
)

// queueStats is the leader's loop that recomputes the queue statistics
// (runs by active status, the age of the oldest due run) every
// QueueStatsInterval and stores them in the one-row queue_stats table.
//
// Why a table and not a bus event: every instance must export the same
// gauges (Prometheus scrapes them all, and whichever instance a dashboard
// or alert happens to read must tell the truth), yet only the leader
// should pay for the counting. A stored row is read at scrape time with a
// primary-key lookup; it survives a change of leader, is there at once for
// an instance that just started, carries its own age (a stuck leader shows
// as stale stats, not as a quiet queue), and needs no new NOTIFY channel,
// event type or listener code.
type queueStats struct{ r *Reactor }

func newQueueStats(r *Reactor) *queueStats { return &queueStats{r: r} }

// run refreshes the stats at once and then every QueueStatsInterval, until
// ctx ends (leadership lost or shutdown).
func (q *queueStats) run(ctx context.Context) {
	loop.Every(ctx, q.r.cfg.QueueStatsInterval, nil, func() { q.refresh(ctx) })
}

// refresh recomputes and stores the stats once. A failure is logged and
// left for the next tick: stale stats show their age in the metrics.
func (q *queueStats) refresh(ctx context.Context) {
	r := q.r
	ctx, cancel := context.WithTimeout(ctx, r.cfg.QueueStatsInterval)
	defer cancel()
	s, err := r.db.RefreshQueueStats(ctx, r.cfg.Instance)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("refresh queue stats failed", "err", err)
		}
		return
	}
	r.log.Debug("queue stats", "pending", s.Pending, "due", s.Due, "leased", s.Leased,
		"running", s.Running, "oldest_due", s.OldestDue.String())
}
