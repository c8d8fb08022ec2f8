//go:build linux

package faults

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// jobDelivery is one request the crash test's target received: which job
// it was for (the job's name, from the path of its target_url), and what
// the request said of its run.
type jobDelivery struct {
	Job         string // the job's name
	Run         int64  // X-Chronos-Run-Id
	Attempt     int    // X-Chronos-Attempt
	ScheduledAt time.Time
	CatchUp     bool
	At          time.Time
}

// jobTarget is a webhook on 127.0.0.1 that answers every request 200
// (500 to the jobs named fail-...) and records it. Each job calls <url>/j/<its name>, so a delivery names its
// job independently of the run id: a run id that the database handed out
// twice (once in a transaction a crash lost) shows as two occurrences
// under one id.
type jobTarget struct {
	srv   *httptest.Server
	mu    sync.Mutex
	log   []jobDelivery
	armed []armed
}

// armed is a signal the target gives when the deliveries of jobs whose
// name begins with prefix reach n.
type armed struct {
	prefix string
	n      int
	seen   int
	ch     chan struct{}
}

func newJobTarget() *jobTarget {
	tg := &jobTarget{}
	tg.srv = httptest.NewServer(http.HandlerFunc(tg.serve))
	return tg
}

// urlFor is the target_url of the job named name.
func (tg *jobTarget) urlFor(name string) string { return tg.srv.URL + "/j/" + name }

func (tg *jobTarget) serve(w http.ResponseWriter, r *http.Request) {
	d := jobDelivery{At: time.Now(), Job: strings.TrimPrefix(r.URL.Path, "/j/"), CatchUp: r.Header.Get("X-Chronos-Catch-Up") == "true"}
	d.Run, _ = strconv.ParseInt(r.Header.Get("X-Chronos-Run-Id"), 10, 64)
	d.Attempt, _ = strconv.Atoi(r.Header.Get("X-Chronos-Attempt"))
	d.ScheduledAt, _ = time.Parse(time.RFC3339Nano, r.Header.Get("X-Chronos-Scheduled-At"))
	// Recorded before the answer: a delivery counts from the moment the
	// target has it, whether or not the worker lives to read the answer.
	tg.mu.Lock()
	tg.log = append(tg.log, d)
	for i := range tg.armed {
		a := &tg.armed[i]
		if strings.HasPrefix(d.Job, a.prefix) {
			if a.seen++; a.seen == a.n {
				close(a.ch)
			}
		}
	}
	tg.mu.Unlock()
	if strings.HasPrefix(d.Job, failPrefix) {
		w.WriteHeader(http.StatusInternalServerError) // its runs go dead, to be redriven
		return
	}
	w.WriteHeader(http.StatusOK)
}

// arm returns a channel closed at once when the target has received the
// n-th delivery (counting from now) of jobs whose name begins with
// prefix: TestCrash crashes the server the moment a given delivery is
// made, with no polling delay.
func (tg *jobTarget) arm(prefix string, n int) <-chan struct{} {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	ch := make(chan struct{})
	tg.armed = append(tg.armed, armed{prefix: prefix, n: max(n, 1), ch: ch})
	return ch
}

// deliveries returns a copy of the log so far.
func (tg *jobTarget) deliveries() []jobDelivery {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return append([]jobDelivery(nil), tg.log...)
}

// count returns how many deliveries so far were for jobs whose name
// begins with prefix.
func (tg *jobTarget) count(prefix string) int {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	n := 0
	for _, d := range tg.log {
		if strings.HasPrefix(d.Job, prefix) {
			n++
		}
	}
	return n
}

func (tg *jobTarget) close() { tg.srv.Close() }
