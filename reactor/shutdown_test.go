package reactor

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// Calls still in flight when the shutdown grace runs out are cancelled and
// their runs handed back to pending, not counted as failures; calls that
// finish within the grace are recorded.
func TestShutdownReleasesRuns(t *testing.T) {
	t.Parallel()
	dsn := sqltest.NewURL(t)
	unblock := make(chan struct{})
	slow := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-unblock:
		case <-r.Context().Done():
		}
	})
	defer close(unblock)
	quick := newTarget(t, func(w http.ResponseWriter, r *http.Request) { time.Sleep(300 * time.Millisecond) })

	// The grace leaves the quick calls (300ms) seconds to finish on a
	// loaded machine.
	in := startReactor(t, dsn, Config{WorkerConcurrency: 6, ShutdownTimeout: 3 * time.Second})
	slowJob := createJob(t, in.db, &chronos.Job{TargetURL: slow.URL})
	quickJob := createJob(t, in.db, &chronos.Job{TargetURL: quick.URL})
	var slowRuns, quickRuns []int64
	for range 3 {
		slowRuns = append(slowRuns, in.trigger(t, slowJob.ID).ID)
	}
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
	for _, id := range slowRuns {
		r := runOf(t, in.db, id)
		if r.Status != chronos.StatusPending || r.LeasedBy != nil {
			t.Errorf("slow run %d is %s leased by %v, want pending and free", id, r.Status, r.LeasedBy)
		}
		if r.LastError != nil && *r.LastError != "" {
			t.Logf("slow run %d last_error %q", id, *r.LastError)
		}
	}
	var leased int
	if err := in.db.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM job_runs WHERE status IN ('leased','running')").Scan(&leased); err != nil {
		t.Fatal(err)
	}
	if leased != 0 {
		t.Errorf("%d runs left leased after a graceful stop", leased)
	}
}

// A reactor that stops while idle returns promptly and leaves nothing
// running (goleak in TestMain checks the goroutines).
func TestShutdownIdle(t *testing.T) {
	t.Parallel()
	dsn := sqltest.NewURL(t)
	in := startReactor(t, dsn, Config{})
	eventually(t, 20*time.Second, "leadership", in.r.IsLeader)
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
