package faults

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// mdelivery is one request the model's target received: whose it was
// (the job's model key, from the URL path the model chose), the headers
// that name the attempt, when it arrived and when the answer left (or the
// client went away), and what the target answered.
type mdelivery struct {
	Key     string
	Run     int64
	Attempt int
	Sched   string // X-Chronos-Scheduled-At as sent
	CatchUp string // X-Chronos-Catch-Up as sent ("" when absent)
	// Backfill is X-Chronos-Backfill as sent ("" when absent).
	Backfill string
	At       time.Time
	// Answered is when the target began its answer (zero when the client
	// left first): the worker cannot have read it, nor ended the attempt
	// because of it, before then.
	Answered time.Time
	Done     time.Time
	Status   int  // what the target answered (0 when the client left first)
	Aborted  bool // the client went away before the answer
}

// behaviour is how the target answers one job: after delay, with 500 for
// attempts up to fail (fail < 0: always), else 200.
type behaviour struct {
	delay time.Duration
	fail  int
}

func (b behaviour) String() string {
	s := "fast"
	if b.delay >= 500*time.Millisecond {
		s = "slow " + b.delay.Round(100*time.Millisecond).String()
	}
	switch {
	case b.fail < 0:
		s += ", always 500"
	case b.fail > 0:
		s += ", 500 for the first " + strconv.Itoa(b.fail)
	}
	return s
}

// modelTarget is the webhook of every model job, at /m/<key>: it answers
// each job as its behaviour says and records every request.
type modelTarget struct {
	srv *httptest.Server

	mu       sync.Mutex
	behave   map[string]behaviour
	log      []mdelivery
	inflight int
}

func newModelTarget() *modelTarget {
	tg := &modelTarget{behave: map[string]behaviour{}}
	tg.srv = httptest.NewServer(http.HandlerFunc(tg.serve))
	return tg
}

// url is the target URL of the job with model key key.
func (tg *modelTarget) url(key string) string { return tg.srv.URL + "/m/" + key }

// set gives a job its behaviour (before it is created, so its first
// request finds it).
func (tg *modelTarget) set(key string, b behaviour) {
	tg.mu.Lock()
	tg.behave[key] = b
	tg.mu.Unlock()
}

func (tg *modelTarget) serve(w http.ResponseWriter, r *http.Request) {
	d := mdelivery{
		Key:     strings.TrimPrefix(r.URL.Path, "/m/"),
		At:      time.Now(),
		Sched:   r.Header.Get("X-Chronos-Scheduled-At"),
		CatchUp: r.Header.Get("X-Chronos-Catch-Up"),

		Backfill: r.Header.Get("X-Chronos-Backfill"),
	}
	d.Run, _ = strconv.ParseInt(r.Header.Get("X-Chronos-Run-Id"), 10, 64)
	d.Attempt, _ = strconv.Atoi(r.Header.Get("X-Chronos-Attempt"))
	tg.mu.Lock()
	b := tg.behave[d.Key]
	tg.inflight++
	tg.mu.Unlock()
	status := http.StatusOK
	if b.fail < 0 || d.Attempt <= b.fail {
		status = http.StatusInternalServerError
	}
	if b.delay > 0 {
		timer := time.NewTimer(b.delay)
		select {
		case <-timer.C:
		case <-r.Context().Done():
			timer.Stop()
			d.Aborted = true
		}
	}
	if !d.Aborted {
		d.Answered = time.Now()
		w.WriteHeader(status)
		if _, err := w.Write([]byte("model")); err != nil {
			d.Aborted = true
		} else {
			// The answer leaves now: Done is no earlier than the moment
			// the worker could read it.
			w.(http.Flusher).Flush()
			d.Status = status
		}
	}
	d.Done = time.Now()
	tg.mu.Lock()
	tg.log = append(tg.log, d)
	tg.inflight--
	tg.mu.Unlock()
}

// deliveries returns a copy of the log and the requests still in flight.
func (tg *modelTarget) deliveries() ([]mdelivery, int) {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return append([]mdelivery(nil), tg.log...), tg.inflight
}

func (tg *modelTarget) close() {
	tg.srv.CloseClientConnections()
	tg.srv.Close()
}
