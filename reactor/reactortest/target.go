package reactortest

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Target is an HTTP server on 127.0.0.1 that counts the requests it gets,
// how many it has in flight, the most it had in flight at once, and when
// each arrived.
type Target struct {
	*httptest.Server
	Hits     atomic.Int64
	InFlight atomic.Int64
	MaxSeen  atomic.Int64

	mu       sync.Mutex
	arrivals []time.Time
}

// NewTarget starts a Target, closed at cleanup, that counts each request
// and then hands it to h (when not nil); a request is in flight until h
// returns.
func NewTarget(t testing.TB, h http.HandlerFunc) *Target {
	tg := &Target{}
	tg.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := tg.InFlight.Add(1)
		defer tg.InFlight.Add(-1)
		for {
			m := tg.MaxSeen.Load()
			if n <= m || tg.MaxSeen.CompareAndSwap(m, n) {
				break
			}
		}
		tg.mu.Lock()
		tg.arrivals = append(tg.arrivals, time.Now())
		tg.mu.Unlock()
		tg.Hits.Add(1)
		if h != nil {
			h(w, r)
		}
	}))
	t.Cleanup(tg.Close)
	return tg
}

// Arrivals returns when each request so far arrived, in order.
func (tg *Target) Arrivals() []time.Time {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return append([]time.Time(nil), tg.arrivals...)
}
