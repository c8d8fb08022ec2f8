package reactor

import (
	"context"

	"github.com/sourcegraph/conc"
)

// leaderWork is what this instance does while it leads: materialize, reap,
// prune, count the queue and keep the planner's statistics fresh, each in
// its own loop. It returns when ctx ends (leadership
// lost or shutdown) and every loop has stopped, which is what lets the
// Leader unlock only after the last leader write.
func (r *Reactor) leaderWork(ctx context.Context) {
	r.log.Info("leader work starting")
	var wg conc.WaitGroup
	wg.Go(func() { newMaterializer(r).run(ctx) })
	wg.Go(func() { newReaper(r).run(ctx) })
	wg.Go(func() { newPruner(r).run(ctx) })
	wg.Go(func() { newQueueStats(r).run(ctx) })
	wg.Go(func() { newPlanStats(r).run(ctx) })
	wg.Go(func() { newLimiter(r).run(ctx) })
	wg.Wait()
	r.log.Info("leader work stopped")
}
