package reactor

import (
	"context"
	"time"

	"github.com/chronoshq/chronos/internal/loop"
)

// planStatsInterval is how often the leader looks for hot tables whose
// planner statistics a burst made stale (see sql.AnalyzeChangedTables):
// a burst's claims are planned on fresh statistics within about this
// long, plus the second Postgres takes to publish the changes.
const planStatsInterval = 2 * time.Second

// planStats is the leader's loop that keeps the planner's statistics of
// the hot tables fresh.
type planStats struct{ r *Reactor }

func newPlanStats(r *Reactor) *planStats { return &planStats{r: r} }

// run analyzes the changed tables at once (a new leader may take over
// after a burst) and then every planStatsInterval until ctx ends
// (leadership lost or shutdown). A failure is logged and left for the
// next pass: autovacuum still analyzes, only later.
func (p *planStats) run(ctx context.Context) {
	loop.Every(ctx, planStatsInterval, nil, func() {
		tables, err := p.r.db.AnalyzeChangedTables(ctx)
		if err != nil && ctx.Err() == nil {
			p.r.log.Warn("analyze changed tables failed", "err", err)
		}
		if len(tables) > 0 {
			p.r.log.Debug("analyzed changed tables", "tables", tables)
		}
	})
}
