package reactor

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
)

// Calls still in flight when the shutdown grace runs out are cancelled.
// Their requests were sent, so each is a counted, recorded attempt that
// failed with "interrupted by shutdown" and retries (or dead-letters) like
// any other; calls that finish within the grace are recorded as they
// answered. Nothing is left leased.
func TestShutdownCountsSentRequests(t *testing.T) {
	dsn := parallelDSN(t)
	slow, release := newHangingTarget(t)
	defer release()
	// A quick call waits for the other one (at most 5 s) before its 300 ms:
	// the two are in flight together however far apart a loaded machine
	// starts them.
	var arrived atomic.Int32
	quick := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		for deadline := time.Now().Add(5 * time.Second); arrived.Load() < 2 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond)
	})

	// The grace leaves the quick calls (300ms) seconds to finish on a
	// loaded machine.
	in := startReactor(t, dsn, Config{WorkerConcurrency: 6, ShutdownTimeout: 3 * time.Second})
	slowJob := createJob(t, in.db, &chronos.Job{TargetURL: slow.URL, MaxRetries: 2})
	lastJob := createJob(t, in.db, &chronos.Job{TargetURL: slow.URL, MaxRetries: 0})
	quickJob := createJob(t, in.db, &chronos.Job{TargetURL: quick.URL})
	var slowRuns, quickRuns []int64
	for range 2 {
		slowRuns = append(slowRuns, in.trigger(t, slowJob.ID).ID)
	}
	lastRun := in.trigger(t, lastJob.ID).ID
	eventually(t, 20*time.Second, "the slow calls in flight", func() bool { return slow.inFlight.Load() == 3 })
	for range 2 {
		quickRuns = append(quickRuns, in.trigger(t, quickJob.ID).ID)
	}
	eventually(t, 20*time.Second, "the quick calls in flight", func() bool { return quick.inFlight.Load() == 2 })

	start := time.Now()
	if err := in.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if el := time.Since(start); el > 20*time.Second {
		t.Errorf("shutdown took %s with a grace of 3s", el)
	}
	for _, id := range quickRuns {
		if r := runOf(t, in.db, id); r.Status != chronos.StatusSucceeded {
			t.Errorf("quick run %d is %s, want succeeded (it finished within the grace)", id, r.Status)
		}
	}
	check := func(id int64, want chronos.RunStatus) {
		t.Helper()
		r := runOf(t, in.db, id)
		if r.Status != want || r.LeasedBy != nil || r.AttemptCount != 1 {
			t.Errorf("slow run %d is %s with %d attempts, leased by %v; want %s with 1 attempt, free",
				id, r.Status, r.AttemptCount, r.LeasedBy, want)
		}
		full, err := in.db.Run(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if len(full.Attempts) != 1 || full.Attempts[0].Error == nil || *full.Attempts[0].Error != InterruptedByShutdown {
			t.Errorf("slow run %d attempts %+v, want one attempt with error %q", id, full.Attempts, InterruptedByShutdown)
		}
	}
	for _, id := range slowRuns {
		check(id, chronos.StatusPending) // retries left: it retries elsewhere
	}
	check(lastRun, chronos.StatusDead) // max_retries 0: that was its one attempt

	in.noneLeased(t, "after a graceful stop")
}

// unsentTransport never writes a request: it waits until the call is
// cancelled, as a dial that never completes would.
type unsentTransport struct{ calls atomic.Int32 }

func (u *unsentTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	u.calls.Add(1)
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// A call whose request was never written when the grace ran out is handed
// back uncounted: the target cannot have seen it.
func TestShutdownReleasesUnsentRequests(t *testing.T) {
	dsn := parallelDSN(t)
	rt := &unsentTransport{}
	in := startReactor(t, dsn, Config{WorkerConcurrency: 4, ShutdownTimeout: 300 * time.Millisecond},
		func(r *Reactor) { r.exec.client.Transport = rt })
	job := createJob(t, in.db, &chronos.Job{TargetURL: "http://127.0.0.1:9/never", MaxRetries: 0})
	run := in.trigger(t, job.ID)
	eventually(t, 5*time.Second, "the call in flight", func() bool { return rt.calls.Load() == 1 })
	if err := in.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	full, err := in.db.Run(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if full.Status != chronos.StatusPending || full.AttemptCount != 0 || len(full.Attempts) != 0 || full.LeasedBy != nil {
		t.Errorf("unsent run is %s with %d attempts (%d rows), leased by %v; want pending, 0 attempts, free",
			full.Status, full.AttemptCount, len(full.Attempts), full.LeasedBy)
	}
}

// A reactor that stops while idle returns promptly and leaves nothing
// running (goleak in TestMain checks the goroutines).
func TestShutdownIdle(t *testing.T) {
	dsn := parallelDSN(t)
	in := startLeader(t, dsn, Config{})
	start := time.Now()
	if err := in.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("idle shutdown took %s", el)
	}
	if in.r.IsLeader() {
		t.Error("still leader after Run returned")
	}
}

// noneLeased fails t (naming when: "after ...") if any run is still
// leased or running.
func (in *instance) noneLeased(t *testing.T, when string) {
	t.Helper()
	var leased int
	if err := in.db.Pool.QueryRow(t.Context(),
		"SELECT count(*) FROM job_runs WHERE status IN ('leased','running')").Scan(&leased); err != nil {
		t.Fatal(err)
	}
	if leased != 0 {
		t.Errorf("%d runs left leased %s", leased, when)
	}
}
