package bench

import (
	"context"
	"fmt"
	"net"
	nethttp "net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The hosts scenario (issue 24, section 2): isolation of a bad host.
const (
	benchHostCount   = 10              // local hosts (ports) the jobs spread over
	benchHostRate    = 200             // triggers per second in each phase
	benchHostTimeout = 2               // seconds: the jobs' timeout (what a hanging host costs a worker)
	benchHostWait    = 2 * time.Minute // for the good hosts' runs of one phase
)

// Modes of the bad host in a phase of benchHosts.
const (
	hostModeOK   = "ok"   // answers 204 like the others
	hostMode429  = "429"  // answers 429 with Retry-After: 5
	hostModeHang = "hang" // never answers (the job's timeout ends each call)
)

// hostTarget is one local host of benchHosts: it records when each run
// arrived, or misbehaves as its mode says.
type hostTarget struct {
	srv  *nethttp.Server
	base string
	mode atomic.Value // string: a hostMode*

	mu       sync.Mutex
	arrivals map[int64]time.Time // run id -> first arrival

	// onArrival sees every request (hostsTrace's, when tracing).
	onArrival atomic.Pointer[func(at time.Time, runID string)]
}

func startHostTarget() (*hostTarget, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("host target: listen: %w", err)
	}
	h := &hostTarget{base: "http://" + ln.Addr().String(), arrivals: map[int64]time.Time{}}
	h.mode.Store(hostModeOK)
	h.srv = &nethttp.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = h.srv.Serve(ln) }()
	return h, nil
}

// ServeHTTP records the arrival and answers as the mode says.
func (h *hostTarget) ServeHTTP(w nethttp.ResponseWriter, r *nethttp.Request) {
	now := time.Now()
	if f := h.onArrival.Load(); f != nil {
		(*f)(now, r.Header.Get("X-Chronos-Run-Id"))
	}
	switch h.mode.Load().(string) {
	case hostMode429:
		w.Header().Set("Retry-After", "5")
		w.WriteHeader(nethttp.StatusTooManyRequests)
		return
	case hostModeHang:
		<-r.Context().Done()
		return
	}
	if id, err := strconv.ParseInt(r.Header.Get("X-Chronos-Run-Id"), 10, 64); err == nil {
		h.mu.Lock()
		if _, seen := h.arrivals[id]; !seen {
			h.arrivals[id] = now
		}
		h.mu.Unlock()
	}
	w.WriteHeader(nethttp.StatusNoContent)
}

func (h *hostTarget) arrived(id int64) (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, ok := h.arrivals[id]
	return t, ok
}

func (h *hostTarget) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = h.srv.Shutdown(ctx)
	_ = h.srv.Close()
}

// benchHosts: HostJobs jobs spread over ten local hosts (ports), each
// triggered once per phase at benchHostRate a second; the good hosts'
// trigger → delivery p99 with the tenth host healthy (baseline), answering
// 429 Retry-After: 5, and hanging, in the same run on the same instances.
// The goal (issue 24): the good hosts' p99 within 10% of the baseline.
func benchHosts(ctx context.Context, b *runner) (*result, error) {
	f := b.cfg
	e, err := b.clusterEnv(ctx, instanceOpts{}, true)
	if err != nil {
		return nil, err
	}
	defer e.close()
	// Nine good hosts, and a tenth of its own for each phase, so that one
	// phase's deferral or open breaker is not the next one's.
	good := make([]*hostTarget, benchHostCount-1)
	for i := range good {
		if good[i], err = startHostTarget(); err != nil {
			return nil, err
		}
		defer good[i].close()
	}
	n := f.HostJobs
	res := &result{Scenario: "hosts"}
	res.param("jobs", n)
	res.param("hosts", benchHostCount)
	res.param("rate", benchHostRate)
	res.clusterParams(&f)

	create := func(name string, h *hostTarget) (int64, error) {
		j, err := e.createJob(ctx, map[string]any{"name": name, "run_at": farFuture(),
			"target_url": h.base + "/h", "max_retries": 0, "timeout_seconds": benchHostTimeout})
		if err != nil {
			return 0, err
		}
		return j.ID, nil
	}
	// Jobs i%10 < 9 are the good hosts'; the others the phase's tenth.
	goodJobs := map[int]int64{}
	for i := range n {
		if i%benchHostCount < benchHostCount-1 {
			if goodJobs[i], err = create(fmt.Sprintf("bench-hosts-%d", i), good[i%benchHostCount]); err != nil {
				return nil, err
			}
		}
	}
	// Warm-up (connections, prepared statements, caches): a tenth of the
	// good jobs, not measured, so the baseline phase is not the cold one.
	var warm []int64
	var warmHosts []*hostTarget
	for i := range n / 10 {
		if id, ok := goodJobs[i]; ok {
			warm = append(warm, id)
			warmHosts = append(warmHosts, good[i%benchHostCount])
		}
	}
	if len(warm) > 0 {
		if _, _, err := hostsPhaseOn(ctx, e, warmHosts, warm, nil); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	p99 := map[string]time.Duration{}
	for _, mode := range []string{hostModeOK, hostMode429, hostModeHang} {
		tenth, err := startHostTarget()
		if err != nil {
			return nil, err
		}
		defer tenth.close()
		tenth.mode.Store(mode)
		hosts := append(append([]*hostTarget(nil), good...), tenth)
		jobs := make([]int64, n)
		for i := range n {
			if id, ok := goodJobs[i]; ok {
				jobs[i] = id
			} else if jobs[i], err = create(fmt.Sprintf("bench-hosts-%s-%d", mode, i), tenth); err != nil {
				return nil, err
			}
		}
		b.progress("hosts: %d triggers, the tenth host %s", n, mode)
		p, err := hostsPhase(ctx, e, hosts, jobs, mode)
		if err != nil {
			return nil, fmt.Errorf("phase %s: %w", mode, err)
		}
		p99[mode] = p.p99
		res.ms("good_p50_"+mode, p.p50)
		res.ms("good_p99_"+mode, p.p99)
	}
	if base := p99[hostModeOK]; base > 0 {
		res.target("good_p99_ratio_429", float64(p99[hostMode429])/float64(base), "×", "≤ 1.10")
		res.target("good_p99_ratio_hang", float64(p99[hostModeHang])/float64(base), "×", "≤ 1.10")
	}
	res.note("the tenth host's own runs are not measured; 429 defers them (uncounted); a hang keeps it from the last quarter of the worker slots (the bulkhead) and opens its breaker after 10 timeouts of %d s", benchHostTimeout)
	return res, nil
}

// hostsPhase triggers every job once at benchHostRate a second and returns
// the trigger → delivery percentiles of the good hosts' runs.
func hostsPhase(ctx context.Context, e *env, hosts []*hostTarget, jobs []int64, mode string) (pct, error) {
	of := make([]*hostTarget, len(jobs))
	for i := range jobs {
		of[i] = hosts[i%len(hosts)]
	}
	bad := hosts[len(hosts)-1]
	tr := startHostsTrace(ctx, e, bad)
	p, runs, err := hostsPhaseOn(ctx, e, of, jobs, bad)
	tr.finish(mode, runs, bad)
	return p, err
}

// hostsPhaseOn triggers jobs[i] (delivered to of[i]) at benchHostRate a
// second and returns the trigger → delivery percentiles of the runs of
// every host but skip, and those runs (for hostsTrace).
func hostsPhaseOn(ctx context.Context, e *env, of []*hostTarget, jobs []int64, skip *hostTarget) (pct, []traceRun, error) {
	type sent struct {
		run  int64
		host *hostTarget
		at   time.Time
	}
	var (
		mu    sync.Mutex
		good  []sent
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
	)
	tick := time.NewTicker(time.Second / benchHostRate)
	defer tick.Stop()
	sem := make(chan struct{}, 16)
	for i, id := range jobs {
		select {
		case <-ctx.Done():
			return pct{}, nil, ctx.Err()
		case <-tick.C:
		}
		h := of[i]
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			t0 := time.Now()
			run, err := e.trigger(ctx, id)
			if err != nil {
				errMu.Lock()
				first = err
				errMu.Unlock()
				return
			}
			if h != skip {
				mu.Lock()
				good = append(good, sent{run, h, t0})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if first != nil {
		return pct{}, nil, first
	}
	deadline := time.Now().Add(benchHostWait)
	var ds []time.Duration
	for _, s := range good {
		for {
			at, ok := s.host.arrived(s.run)
			if ok {
				ds = append(ds, at.Sub(s.at))
				break
			}
			if time.Now().After(deadline) {
				return pct{}, nil, fmt.Errorf("run %d not delivered within %s", s.run, benchHostWait)
			}
			if err := sleepCtx(ctx, 5*time.Millisecond); err != nil {
				return pct{}, nil, err
			}
		}
	}
	runs := make([]traceRun, len(good))
	for i, s := range good {
		runs[i] = traceRun{at: s.at, lat: ds[i], host: slices.Index(of, s.host)}
	}
	return percentiles(ds), runs, nil
}
