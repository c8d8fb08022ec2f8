package faults

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/chronoshq/chronos/internal/loop"
)

// Jobs behind their schedule, as the database's clock sees them: a job
// is behind when its next_run_at lies a second or more before now(). A
// gap (sql.gapOf) is a job with more than one occurrence due and not
// created, so its next_run_at at least one interval (a second, in the
// model) behind; a job whose run is decided only when due (skip or
// queue_one with a run active) is behind less than that between two ticks
// of a working leader. A leader that creates runs keeps every enabled
// job a lookahead ahead (its runs exist before they are due); only a time
// in which no leader created runs leaves a job behind: no leader at all,
// or one that holds the lock but cannot work (its process starved on a
// loaded machine, frozen by the model's "stall", or waiting on the
// database), which the docs call a gap as well ("when the cluster was
// down or had no leader past more than one occurrence": a leader that
// creates no run is none, to the schedule). The lock alone cannot tell the
// two apart; these samples can.

// A cron job whose window has ended has no next_run_at: it is behind when
// the last materializer pass stopped vouching for the present
// (chronos_materializer.valid_until, migration 036) a second or more
// before now(), which is when the claim holds its runs and the next pass
// may fold them.

// behindSample is one sample: the database's now() and the enabled jobs
// behind at it.
type behindSample struct {
	at   time.Time
	jobs []int64
}

// behindSampler samples the jobs behind at once and then every 50 ms
// until stopped.
type behindSampler struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	samples []behindSample
}

func (s *seqRun) startBehindSampler() *behindSampler {
	ctx, cancel := context.WithCancel(context.Background())
	b := &behindSampler{cancel: cancel}
	b.wg.Go(func() { loop.Every(ctx, 50*time.Millisecond, nil, func() { b.sample(ctx, s) }) })
	return b
}

// sample adds one sample, unless the query fails (the suite is stopping,
// or the database is down: the gap in the samples says so).
func (b *behindSampler) sample(ctx context.Context, s *seqRun) {
	qctx, qcancel := context.WithTimeout(ctx, 2*time.Second)
	defer qcancel()
	var x behindSample
	err := s.c.db.Pool.QueryRow(qctx, `
		SELECT now(), coalesce(array_agg(job_id), '{}') FROM job_schedules
		 WHERE enabled AND (next_run_at <= now() - interval '1 second'
		       OR (cron AND next_run_at IS NULL
		           AND (SELECT valid_until <= now() - interval '1 second' FROM chronos_materializer)))`).Scan(&x.at, &x.jobs)
	if err != nil {
		return
	}
	b.mu.Lock()
	b.samples = append(b.samples, x)
	b.mu.Unlock()
}

func (b *behindSampler) stop() {
	b.cancel()
	b.wg.Wait()
}

// wasBehind reports whether job was behind at some moment of [from, to]
// as far as the samples show; a stretch of more than 300 ms without a
// sample (a loaded machine) proves nothing, and counts as behind.
func (b *behindSampler) wasBehind(job int64, from, to time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	prev := from
	for _, x := range b.samples {
		if x.at.Before(from) {
			continue
		}
		if x.at.After(to) {
			break
		}
		if x.at.Sub(prev) > 300*time.Millisecond || slices.Contains(x.jobs, job) {
			return true
		}
		prev = x.at
	}
	return to.Sub(prev) > 300*time.Millisecond
}

// frozen reports whether the model froze instance who (SIGSTOP) during
// some moment of [from, to].
func (s *seqRun) frozen(who string, from, to time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.stops {
		if st.signal == "SIGSTOP" && st.who == who && st.at.Before(to) && st.thawed.After(from) {
			return true
		}
	}
	return false
}
