package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"strconv"
	"sync"
	"time"

	"github.com/chronoshq/chronos/reactor"
)

// arrival is one request the target received.
type arrival struct {
	at          time.Time
	path        string
	runID       int64
	scheduledAt time.Time
}

// target is the local webhook target: it answers 204 at once and records
// when each request arrived.
type target struct {
	srv  *nethttp.Server
	ln   net.Listener
	base string
	done chan struct{}

	mu       sync.Mutex
	arrivals []arrival
	// observe, when set, is handed each arrival instead of keeping it
	// (sustained: millions of requests are counted, not stored). Called
	// with mu held.
	observe func(arrival)
	waiters map[int64]chan time.Time // run id -> who waits for its arrival
	early   map[int64]time.Time      // arrivals nobody waited for yet (latency)
	watch   bool                     // keep early/waiters (latency only)
	delay   time.Duration            // how long each answer takes (Config.TargetDelay)
}

func startTarget(delay time.Duration) (*target, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("target: listen: %w", err)
	}
	t := &target{
		ln:      ln,
		base:    "http://" + ln.Addr().String(),
		waiters: map[int64]chan time.Time{},
		early:   map[int64]time.Time{},
		done:    make(chan struct{}),
		delay:   delay,
	}
	t.srv = &nethttp.Server{Handler: t, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(t.done)
		_ = t.srv.Serve(ln)
	}()
	return t, nil
}

// ServeHTTP records the arrival and answers 204.
func (t *target) ServeHTTP(w nethttp.ResponseWriter, r *nethttp.Request) {
	at := time.Now()
	a := arrival{at: at, path: r.URL.Path}
	a.runID, _ = strconv.ParseInt(r.Header.Get(reactor.HeaderRunID), 10, 64)
	a.scheduledAt, _ = time.Parse(time.RFC3339Nano, r.Header.Get(reactor.HeaderScheduledAt))
	t.mu.Lock()
	if t.observe != nil {
		t.observe(a)
	} else {
		t.arrivals = append(t.arrivals, a)
	}
	if t.watch {
		if ch, ok := t.waiters[a.runID]; ok {
			delete(t.waiters, a.runID)
			ch <- at
		} else if _, seen := t.early[a.runID]; !seen {
			t.early[a.runID] = at
		}
	}
	t.mu.Unlock()
	_, _ = io.Copy(io.Discard, r.Body)
	if t.delay > 0 {
		select {
		case <-time.After(t.delay):
		case <-r.Context().Done():
		}
	}
	w.WriteHeader(nethttp.StatusNoContent)
}

// setObserver hands every later arrival to f instead of keeping it.
func (t *target) setObserver(f func(arrival)) {
	t.mu.Lock()
	t.observe = f
	t.mu.Unlock()
}

// count is how many requests arrived (and were kept) so far.
func (t *target) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.arrivals)
}

// countPath is how many requests for path arrived so far.
func (t *target) countPath(path string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, a := range t.arrivals {
		if a.path == path {
			n++
		}
	}
	return n
}

// snapshot returns a copy of the arrivals so far.
func (t *target) snapshot() []arrival {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]arrival(nil), t.arrivals...)
}

// await returns when the run's request arrived (it may already have: the
// trigger's own response can come after the delivery).
func (t *target) await(ctx context.Context, runID int64) (time.Time, error) {
	t.mu.Lock()
	if at, ok := t.early[runID]; ok {
		delete(t.early, runID)
		t.mu.Unlock()
		return at, nil
	}
	ch := make(chan time.Time, 1)
	t.waiters[runID] = ch
	t.mu.Unlock()
	select {
	case at := <-ch:
		return at, nil
	case <-ctx.Done():
		t.mu.Lock()
		delete(t.waiters, runID)
		t.mu.Unlock()
		return time.Time{}, fmt.Errorf("run %d never reached the target: %w", runID, ctx.Err())
	}
}

// waitCount waits until at least n requests arrived, polling memory only.
func (t *target) waitCount(ctx context.Context, n int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for t.count() < n {
		select {
		case <-ctx.Done():
			return fmt.Errorf("target received %d of %d requests within %s", t.count(), n, timeout)
		case <-time.After(2 * time.Millisecond):
		}
	}
	return nil
}

func (t *target) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = t.srv.Shutdown(ctx)
	<-t.done
}
