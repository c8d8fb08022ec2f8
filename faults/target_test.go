package faults

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// delivery is one request the target received.
type delivery struct {
	Run     int64
	Attempt int
	At      time.Time
	Done    time.Time // when the answer was written, or the client vanished
	Aborted bool      // the client went away before the answer (killed worker)
}

// target is the webhook every job calls: it records each delivery and can
// hold requests open (to have calls in flight when a worker dies).
type target struct {
	srv *httptest.Server

	mu       sync.Mutex
	log      []delivery
	hold     chan struct{} // non-nil: requests wait until it is closed
	inflight atomic.Int64
}

func newTarget() *target {
	tg := &target{}
	tg.srv = httptest.NewServer(http.HandlerFunc(tg.serve))
	return tg
}

func (tg *target) serve(w http.ResponseWriter, r *http.Request) {
	d := delivery{At: time.Now()}
	d.Run, _ = strconv.ParseInt(r.Header.Get("X-Chronos-Run-Id"), 10, 64)
	d.Attempt, _ = strconv.Atoi(r.Header.Get("X-Chronos-Attempt"))
	tg.inflight.Add(1)
	defer tg.inflight.Add(-1)
	tg.mu.Lock()
	hold := tg.hold
	tg.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			d.Aborted = true
		}
	}
	if !d.Aborted {
		w.WriteHeader(http.StatusOK)
		// Flushing makes the answer leave now; an error here means the
		// worker is gone.
		if _, err := w.Write([]byte("ok")); err != nil {
			d.Aborted = true
		}
	}
	d.Done = time.Now()
	tg.mu.Lock()
	tg.log = append(tg.log, d)
	tg.mu.Unlock()
}

// holdRequests makes new and waiting requests wait until release.
func (tg *target) holdRequests() {
	tg.mu.Lock()
	if tg.hold == nil {
		tg.hold = make(chan struct{})
	}
	tg.mu.Unlock()
}

// release lets held requests answer.
func (tg *target) release() {
	tg.mu.Lock()
	if tg.hold != nil {
		close(tg.hold)
		tg.hold = nil
	}
	tg.mu.Unlock()
}

// deliveries returns a copy of the log so far.
func (tg *target) deliveries() []delivery {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return append([]delivery(nil), tg.log...)
}

func (tg *target) close() {
	tg.release()
	tg.srv.Close()
}
