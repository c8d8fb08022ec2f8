package tests

import (
	"net/http"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/reactor"
	"github.com/chronoshq/chronos/reactor/reactortest"
)

// Ticket 15: WORKER_CONCURRENCY. With a burst of 200 due runs and
// concurrency 5, the target never sees more than 5 requests in flight from
// the instance, and all 200 complete.
func TestTicket15WorkerConcurrency(t *testing.T) {
	dsn := parallelDSN(t)
	tg := rxNewTarget(t, func(w http.ResponseWriter, r *http.Request) { time.Sleep(3 * time.Millisecond) })
	db := reactortest.OpenDB(t, dsn, "t15-setup")
	job := rxJob(t, db, &chronos.Job{TargetURL: tg.URL})
	const n = 200
	for range n {
		smTrigger(t, db, job.ID)
	}

	in := rxStart(t, dsn, "t15", rxOptions{Reactor: true, Listener: true, Config: reactor.Config{WorkerConcurrency: 5}})
	rxEventually(t, 30*time.Second, "all 200 runs succeeded", func() bool {
		var done int
		if err := in.DB.Pool.QueryRow(t.Context(),
			"SELECT count(*) FROM job_runs WHERE job_id = $1 AND status = 'succeeded'", job.ID).Scan(&done); err != nil {
			t.Fatal(err)
		}
		return done == n
	})
	if m := tg.MaxSeen.Load(); m > 5 {
		t.Errorf("the target saw %d requests in flight; WORKER_CONCURRENCY is 5", m)
	}
	if h := tg.Hits.Load(); h != n {
		t.Errorf("the target was called %d times, want %d", h, n)
	}
	t.Logf("most in flight at once: %d", tg.MaxSeen.Load())
}
