package reactor

import (
	"context"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/internal/loop"
	"github.com/chronoshq/chronos/sql"
)

// materializeBatch is how many jobs one db.Materialize call examines.
const materializeBatch = 2000

// materializer turns due occurrences into pending runs, a lookahead ahead
// of their scheduled instant, on a tick and whenever a job changes (a new
// or rescheduled job may be due within the lookahead).
type materializer struct {
	r        *Reactor
	interval time.Duration
}

func newMaterializer(r *Reactor) *materializer {
	// Tick several times per lookahead, so runs exist well before they
	// are due, but not more often than needed.
	iv := min(max(r.cfg.Lookahead/4, 50*time.Millisecond), time.Second)
	return &materializer{r: r, interval: iv}
}

func (m *materializer) run(ctx context.Context) {
	wake := m.r.bus.SubscribeWake(m.wakes)
	defer wake.Close()
	loop.Every(ctx, m.interval, wake.C(), func() { m.tick(ctx) })
}

// wakes reports whether e calls for a tick before the next one is due: a
// changed job may have an occurrence within the lookahead. A created job
// whose first run is later than the lookahead and one interval from now
// is left to the ticks, which come every interval and look a lookahead
// ahead, so they materialize it as early as any other job; the
// interval's margin covers a leader whose clock is a little behind the
// database's. Without this, each of a stream of creates of jobs due
// later (thousands a second) made the materializer tick at once, back to
// back, for nothing.
func (m *materializer) wakes(e chronos.Event) bool {
	if e.Type != chronos.EventJobChanged {
		return false
	}
	if e.Op == "created" && e.NextRunAt != nil {
		return !e.NextRunAt.After(time.Now().Add(m.r.cfg.Lookahead + m.interval))
	}
	return true
}

// tick materializes batches until one comes back short.
func (m *materializer) tick(ctx context.Context) {
	r := m.r
	for ctx.Err() == nil {
		// The zero time: the database's clock decides what is due.
		res, err := r.db.Materialize(ctx, time.Time{}, r.cfg.Lookahead, materializeBatch)
		if err != nil {
			if ctx.Err() == nil {
				r.log.Error("materialize failed", "err", err)
			}
			return
		}
		if res.Created > 0 {
			e := chronos.Event{Type: chronos.EventMaterialized, Instance: r.cfg.Instance, Count: res.Created}
			if t := earliestAvailable(res.Runs); t != nil {
				// The local dispatcher arms its timer from this; other
				// instances get the same from the insert's NOTIFY.
				e.AvailableAt = t
			}
			if len(res.Runs) == 1 {
				e.RunID, e.JobID = res.Runs[0].ID, res.Runs[0].JobID
			}
			r.log.Debug("materialized runs", "count", res.Created, "jobs", res.Jobs)
			r.bus.Publish(e)
		}
		m.announce(res)
		if res.Jobs < materializeBatch {
			return
		}
	}
}

// announce publishes, job by job, the occurrences skipped (overlap) or
// not run for another reason (excluded dates, misfire policy, starting
// deadline: Op says which), and the gaps caught up, so the event tap can show them for one job and the metrics
// can count them by reason.
func (m *materializer) announce(res sql.MaterializeResult) {
	r := m.r
	for id, n := range res.Skips {
		r.log.Debug("skipped occurrences", "job_id", id, "count", n, "reason", chronos.SkipOverlap)
		r.bus.Publish(chronos.Event{Type: chronos.EventSkipped, Instance: r.cfg.Instance, JobID: id,
			Count: n, Op: chronos.SkipOverlap})
	}
	for id, reasons := range res.Missed {
		for reason, n := range reasons {
			r.log.Debug("occurrences not run", "job_id", id, "count", n, "reason", reason)
			r.bus.Publish(chronos.Event{Type: chronos.EventSkipped, Instance: r.cfg.Instance, JobID: id,
				Count: n, Op: reason})
		}
	}
	for _, c := range res.CatchUps {
		at := c.At
		r.log.Info("caught up a gap", "job_id", c.JobID, "scheduled_at", at, "folded_runs", c.Folded)
		r.bus.Publish(chronos.Event{Type: chronos.EventCaughtUp, Instance: r.cfg.Instance, JobID: c.JobID,
			ScheduledAt: &at, Count: c.Folded})
	}
}

func earliestAvailable(runs []*chronos.Run) *time.Time {
	var t *time.Time
	for _, run := range runs {
		if t == nil || run.AvailableAt.Before(*t) {
			a := run.AvailableAt
			t = &a
		}
	}
	return t
}
