package bench

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/internal/loop"
)

// hostsTrace writes a timeline of each phase of `bench hosts` to the file
// CHRONOS_BENCH_HOSTS_TRACE names (appended; off when unset), to find
// what a bad phase's slow runs coincide with: each good run slower than
// 20 ms at its trigger instant, the good runs' p50 and max per 250 ms,
// every request to the tenth host, the instances' host.* events, GC
// pauses over 2 ms, and every 10 ms the database's active statements
// older than 15 ms or waiting, and the locks waited for (with the holder).
// Session 9 found the first deferral's planning burst with it
// (docs/performance.md, "Session 9: hosts"). The sampling costs CPU of
// its own: compare traced runs with traced runs.
type hostsTrace struct {
	mu     sync.Mutex
	start  time.Time
	lines  []traceLine
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type traceLine struct {
	at   time.Duration
	kind string
	text string
}

func (t *hostsTrace) add(at time.Time, kind, text string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.lines = append(t.lines, traceLine{at.Sub(t.start), kind, text})
	t.mu.Unlock()
}

func startHostsTrace(ctx context.Context, e *env, bad *hostTarget) *hostsTrace {
	if os.Getenv("CHRONOS_BENCH_HOSTS_TRACE") == "" {
		return nil
	}
	t := &hostsTrace{start: time.Now()}
	ctx, t.cancel = context.WithCancel(ctx)
	for _, in := range e.insts {
		p, ok := in.(*inProcess)
		if !ok || p.bus == nil {
			continue
		}
		sub := p.bus.Subscribe(4096, func(ev chronos.Event) bool { return strings.HasPrefix(string(ev.Type), "host.") })
		t.wg.Go(func() {
			defer sub.Close()
			for {
				select {
				case <-ctx.Done():
					return
				case ev := <-sub.C():
					u := ""
					if ev.Until != nil {
						u = fmt.Sprintf(" until=+%dms", ev.Until.Sub(t.start).Milliseconds())
					}
					t.add(time.Now(), "event", fmt.Sprintf("%s %s%s count=%d run=%d", p.id, ev.Type, u, ev.Count, ev.RunID))
				}
			}
		})
	}
	if bad != nil {
		f := func(at time.Time, id string) { t.add(at, "bad", "arrival run="+id) }
		bad.onArrival.Store(&f)
	}
	t.wg.Go(func() { loop.Every(ctx, 10*time.Millisecond, nil, func() { t.samplePG(ctx, e) }) })
	return t
}

// samplePG adds the database's active statements older than 15 ms or
// waiting, and the locks waited for (with the holder), to the trace.
func (t *hostsTrace) samplePG(ctx context.Context, e *env) {
	rows, err := e.db.Pool.Query(ctx, `
		SELECT pid, coalesce(wait_event_type, ''), coalesce(wait_event, ''),
		       extract(epoch FROM clock_timestamp() - query_start) * 1000, left(regexp_replace(query, '\s+', ' ', 'g'), 90)
		  FROM pg_stat_activity
		 WHERE state = 'active' AND pid <> pg_backend_pid() AND datname = current_database()
		   AND (wait_event_type IN ('Lock', 'LWLock', 'IO', 'BufferPin') OR clock_timestamp() - query_start > interval '15 ms')`)
	if err != nil {
		return
	}
	now := time.Now()
	for rows.Next() {
		var (
			pid      int
			wt, w, q string
			ms       float64
		)
		if rows.Scan(&pid, &wt, &w, &ms, &q) == nil {
			t.add(now, "pg", fmt.Sprintf("pid=%d %s/%s %.0fms %s", pid, wt, w, ms, q))
		}
	}
	rows.Close()
	rows, err = e.db.Pool.Query(ctx, `
		SELECT l.pid, l.locktype, l.mode, coalesce(l.classid::regclass::text, ''), coalesce(l.objid::bigint, 0), coalesce(l.relation::regclass::text, ''),
		       pg_blocking_pids(l.pid)::text,
		       coalesce((SELECT left(regexp_replace(b.query, '\s+', ' ', 'g'), 70) || ' [' || b.state || ']' FROM pg_stat_activity b WHERE b.pid = (pg_blocking_pids(l.pid))[1]), '')
		  FROM pg_locks l WHERE NOT l.granted`)
	if err != nil {
		t.add(time.Now(), "err", err.Error())
		return
	}
	now = time.Now()
	for rows.Next() {
		var (
			pid                        int
			lt, mode, cls, rel, bl, bq string
			objid                      int64
		)
		if err := rows.Scan(&pid, &lt, &mode, &cls, &objid, &rel, &bl, &bq); err == nil {
			t.add(now, "lock", fmt.Sprintf("pid=%d %s %s class=%s obj=%d rel=%s blockers=%s: %s", pid, lt, mode, cls, objid, rel, bl, bq))
		} else {
			t.add(now, "err", err.Error())
		}
	}
	rows.Close()
}

type traceRun struct {
	at   time.Time
	lat  time.Duration
	host int
}

// finish writes the phase's timeline to the trace file.
func (t *hostsTrace) finish(phase string, runs []traceRun, bad *hostTarget) {
	if t == nil {
		return
	}
	t.cancel()
	t.wg.Wait()
	if bad != nil {
		bad.onArrival.Store(nil)
	}
	var gc debug.GCStats
	debug.ReadGCStats(&gc)
	for i, end := range gc.PauseEnd {
		if end.After(t.start) && gc.Pause[i] > 2*time.Millisecond {
			t.add(end, "gc", fmt.Sprintf("pause %s", gc.Pause[i]))
		}
	}
	for _, r := range runs {
		if r.lat > 20*time.Millisecond {
			t.add(r.at, "slow", fmt.Sprintf("host=%d lat=%.1fms", r.host, float64(r.lat.Microseconds())/1000))
		}
	}
	// Per 250 ms: good runs triggered, their max latency.
	buckets := map[int][]time.Duration{}
	for _, r := range runs {
		b := int(r.at.Sub(t.start) / (250 * time.Millisecond))
		buckets[b] = append(buckets[b], r.lat)
	}
	for b, ds := range buckets {
		p := percentiles(ds)
		t.lines = append(t.lines, traceLine{time.Duration(b) * 250 * time.Millisecond, "bucket",
			fmt.Sprintf("n=%d p50=%.1fms max=%.1fms", len(ds), float64(p.p50.Microseconds())/1000, float64(p.max.Microseconds())/1000)})
	}
	sort.SliceStable(t.lines, func(i, j int) bool { return t.lines[i].at < t.lines[j].at })
	f, err := os.OpenFile(os.Getenv("CHRONOS_BENCH_HOSTS_TRACE"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "=== phase %s start %s\n", phase, t.start.Format(time.RFC3339Nano))
	for _, l := range t.lines {
		fmt.Fprintf(f, "%8.1f %-6s %s\n", float64(l.at.Microseconds())/1000, l.kind, l.text)
	}
}
