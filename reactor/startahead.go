package reactor

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/chronoshq/chronos/internal/instant"
	"github.com/chronoshq/chronos/sql"
)

// startAheadLead is how long before a claimed-ahead run's instant its
// StartAhead is written: about a round trip and a commit, so the write
// adds nothing to the delay between the instant and the request.
const startAheadLead = 2 * time.Millisecond

// aheadStart is the one StartAhead write of the runs a claim took ahead
// of one instant (see groupAhead): the first of their workers to reach
// the instant less startAheadLead writes it for all of them, and the
// others wait for its answer. A herd's instant is then one statement, not
// one per run queueing for the pool just when the runs are due.
type aheadStart struct {
	at     time.Time // when to write: the group's earliest Due less startAheadLead
	leases []sql.Lease

	once    sync.Once
	started map[int64]bool // the runs the write marked running
	err     error
}

// groupAhead groups the runs of one claim taken ahead of their instant by
// that instant (their available_at), and returns each one's group by run
// id. Runs claimed as due have none.
func groupAhead(runs []sql.Claimed) map[int64]*aheadStart {
	byRun := map[int64]*aheadStart{}
	byInstant := map[time.Time]*aheadStart{}
	for _, c := range runs {
		if c.Wait <= 0 {
			continue
		}
		due := c.Run.AvailableAt.UTC()
		at := c.Due.Add(-startAheadLead)
		g := byInstant[due]
		if g == nil {
			g = &aheadStart{at: at}
			byInstant[due] = g
		}
		g.at = instant.Earlier(g.at, at)
		g.leases = append(g.leases, c.Lease())
		byRun[c.Run.ID] = g
	}
	return byRun
}

// start writes the group's StartAhead once, whoever calls it first, and
// tells whether run id was marked running (a run left out lost its
// lease); err when the write failed.
func (g *aheadStart) start(db *sql.DB, id int64) (bool, error) {
	g.once.Do(func() {
		// A context of its own, like every worker write: it records a
		// run's start, and a shutdown must not cut it off half way.
		ctx, cancel := context.WithTimeout(context.Background(), dbWriteTimeout)
		defer cancel()
		g.started, g.err = db.StartAhead(ctx, g.leases)
	})
	return g.started[id], g.err
}

// startAhead holds a run claimed ahead of its instant (see sql.ClaimAhead)
// until then, marking it started with the rest of its group (g) just
// before. It is false when the run must not be sent: the start found the
// lease gone (a pause or schedule change took the run back: it belongs to
// the old plan), the start failed (the run is released, as it is
// unconfirmed), or the hard shutdown came first (released: nothing was
// sent).
func (r *Reactor) startAhead(c sql.Claimed, g *aheadStart) bool {
	lease := c.Lease()
	if !r.waitUntil(g.at) {
		r.release(lease, c.Run.JobID)
		return false
	}
	started, err := g.start(r.db, lease.RunID)
	switch {
	case err != nil:
		r.log.Error("start run ahead failed; releasing it unsent", "run_id", lease.RunID, "err", err)
		r.release(lease, c.Run.JobID)
		return false
	case !started:
		err := fmt.Errorf("start run %d attempt %d ahead: %w", lease.RunID, lease.Attempt, sql.ErrLeaseLost)
		leaseLost(r.log, r.bus, r.cfg.Instance, lease, c.Run.JobID, "start", err)
		return false
	}
	if !r.waitUntil(c.Due) {
		r.release(lease, c.Run.JobID)
		return false
	}
	return true
}
