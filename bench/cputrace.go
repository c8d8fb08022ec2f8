package bench

import (
	"context"
	"sync"
	"time"
)

// cpuTrace samples a cpuMeter at a steady interval until stopped, so that
// the CPU used between two instants known only afterwards can be read:
// the peer's start (T') and its last completion, which it reports when
// it exits.
type cpuTrace struct {
	meter   *cpuMeter
	mu      sync.Mutex
	at      []time.Time
	samples []cpuSample
	cancel  context.CancelFunc
	done    chan struct{}
}

// traceCPU starts sampling m every interval.
func traceCPU(ctx context.Context, m *cpuMeter, every time.Duration) *cpuTrace {
	ctx, cancel := context.WithCancel(ctx)
	t := &cpuTrace{meter: m, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			// A failed reading (a backend exiting while it was read) is
			// skipped: the next one, a tick later, stands in for it.
			t.take(m)
			select {
			case <-ctx.Done():
				// The last reading closes the window: a few tries, since
				// the peer's connections are closing just then, and a
				// window without a reading after its end is no window.
				for range 5 {
					if t.take(m) {
						return
					}
					time.Sleep(5 * time.Millisecond)
				}
				return
			case <-tick.C:
			}
		}
	}()
	return t
}

// take records one reading of m, and says whether it could.
func (t *cpuTrace) take(m *cpuMeter) bool {
	s, err := m.sample()
	if err != nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.at, t.samples = append(t.at, time.Now()), append(t.samples, s)
	return true
}

// stop ends the sampling and waits for it.
func (t *cpuTrace) stop() {
	t.cancel()
	<-t.done
}

// between returns the last sample taken at or before from and the first
// taken at or after to: a window that holds [from, to] with at most an
// interval to spare on each side. ok is false when no samples bracket it.
func (t *cpuTrace) between(from, to time.Time) (before, after cpuSample, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b, a := -1, -1
	for i, at := range t.at {
		if !at.After(from) {
			b = i
		}
		if a < 0 && !at.Before(to) {
			a = i
		}
	}
	if b < 0 || a < 0 {
		return cpuSample{}, cpuSample{}, false
	}
	return t.samples[b], t.samples[a], true
}
