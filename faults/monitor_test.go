package faults

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// monitor watches a cluster while a scenario runs, over the direct
// connection (it sees through every fault): who holds the leadership lock
// (every 50 ms) and leases held past their expiry (every 250 ms).
type monitor struct {
	c      *cluster
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	samples  []leaderSample
	overdue  []string      // leases overdue while a healthy leader should have reaped them
	maxLate  time.Duration // the most overdue lease seen while a leader worked
	queryErr int

	readyRounds int           // /readyz rounds over the live instances
	dualSelf    int           // rounds in which two instances said leader.self
	dualSince   time.Time     // start of the current run of such rounds
	dualLongest time.Duration // longest run of them
}

// sampleReadyz asks every live instance's /readyz whether it leads, and
// counts the rounds in which more than one says so.
func (m *monitor) sampleReadyz(ctx context.Context) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	selfs := 0
	for _, in := range m.c.live() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			r, err := in.readyz(rctx)
			if err == nil && r.Leader.Self {
				mu.Lock()
				selfs++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.readyRounds++
	if selfs > 1 {
		m.dualSelf++
		if m.dualSince.IsZero() {
			m.dualSince = now
		}
		m.dualLongest = max(m.dualLongest, now.Sub(m.dualSince))
	} else {
		m.dualSince = time.Time{}
	}
}

type leaderSample struct {
	at   time.Time
	name string
}

// overdueSlack is what a lease may be overdue past one reaper interval
// before it counts against the reaper: the reaper's own query time and a
// loaded 2-core machine, generously.
const overdueSlack = 5 * time.Second

func startMonitor(c *cluster) *monitor {
	ctx, cancel := context.WithCancel(context.Background())
	m := &monitor{c: c, cancel: cancel}
	m.wg.Add(3)
	go m.loop(ctx, 50*time.Millisecond, m.sampleLeader)
	go m.loop(ctx, 250*time.Millisecond, m.sampleLeases)
	go m.loop(ctx, 500*time.Millisecond, m.sampleReadyz)
	return m
}

func (m *monitor) stop() {
	m.cancel()
	m.wg.Wait()
}

func (m *monitor) loop(ctx context.Context, every time.Duration, f func(context.Context)) {
	defer m.wg.Done()
	tick(ctx, every, f)
}

func (m *monitor) sampleLeader(ctx context.Context) {
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	name, err := m.c.leader(qctx)
	at := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			m.queryErr++
		}
		return
	}
	m.samples = append(m.samples, leaderSample{at, name})
}

// sampleLeases looks for leases past leased_until + one reaper interval +
// slack, and counts one against the reaper only when some instance has
// been doing leader work, with the database reachable, for all that time.
func (m *monitor) sampleLeases(ctx context.Context) {
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	limit := m.c.cfg.reaper + overdueSlack
	rows, err := m.c.db.Pool.Query(qctx, `
		SELECT id, leased_by, leased_until, now() FROM job_runs
		 WHERE status IN ('leased', 'running') AND leased_until < now() - $1::interval`, limit)
	if err != nil {
		if ctx.Err() == nil {
			m.mu.Lock()
			m.queryErr++
			m.mu.Unlock()
		}
		return
	}
	defer rows.Close()
	since := m.leaderWorkingSince()
	faultEnd := m.lastFaultEnd()
	for rows.Next() {
		var (
			id         int64
			by         string
			until, now time.Time
		)
		if err := rows.Scan(&id, &by, &until, &now); err != nil {
			return
		}
		from := until
		if since.IsZero() {
			continue // nobody leads: nobody reaps
		}
		if since.After(from) {
			from = since
		}
		if faultEnd.After(from) {
			from = faultEnd
		}
		late := now.Sub(from)
		m.mu.Lock()
		m.maxLate = max(m.maxLate, late)
		if late > limit {
			m.overdue = append(m.overdue, fmt.Sprintf("run %d leased by %s until %s still leased at %s (leader working since %s)",
				id, by, until.Format("15:04:05.000"), now.Format("15:04:05.000"), since.Format("15:04:05.000")))
		}
		m.mu.Unlock()
	}
}

// leaderWorkingSince is when the current stretch of leader work began
// (from the instances' logs), or zero when nobody does leader work.
func (m *monitor) leaderWorkingSince() time.Time {
	var since time.Time
	m.c.leaders.mu.Lock()
	defer m.c.leaders.mu.Unlock()
	for _, s := range m.c.leaders.open {
		if since.IsZero() || s.Before(since) {
			since = s
		}
	}
	return since
}

// lastFaultEnd is the end of the latest database fault (now, during one).
func (m *monitor) lastFaultEnd() time.Time {
	var end time.Time
	for _, w := range m.c.faults.snapshot() {
		e := w.end
		if e.IsZero() {
			e = time.Now()
		}
		if e.After(end) {
			end = e
		}
	}
	return end
}

// leaderSamples returns the lock holder samples so far.
func (m *monitor) leaderSamples() []leaderSample {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]leaderSample(nil), m.samples...)
}
