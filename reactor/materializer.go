package reactor

import (
	"context"
	"time"

	"github.com/chronoshq/chronos"
)

// materializeBatch is how many jobs one db.Materialize call examines.
const materializeBatch = 500

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
	wake := m.r.bus.SubscribeWake(func(e chronos.Event) bool { return e.Type == chronos.EventJobChanged })
	defer wake.Close()
	tick := time.NewTicker(m.interval)
	defer tick.Stop()
	for {
		m.tick(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-wake.C():
		}
	}
}

// tick materializes batches until one comes back short.
func (m *materializer) tick(ctx context.Context) {
	r := m.r
	for ctx.Err() == nil {
		res, err := r.db.Materialize(ctx, time.Now(), r.cfg.Lookahead, materializeBatch)
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
		if res.Skipped > 0 {
			r.log.Debug("skipped occurrences", "count", res.Skipped)
			r.bus.Publish(chronos.Event{Type: chronos.EventSkipped, Instance: r.cfg.Instance, Count: res.Skipped})
		}
		if res.Jobs < materializeBatch {
			return
		}
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
