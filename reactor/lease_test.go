package reactor

import (
	"net/http"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
)

// When a renewal finds the lease gone (the run was reclaimed), the worker
// cancels its call, records nothing, and publishes EventLeaseLost.
func TestLeaseLostCancelsCall(t *testing.T) {
	dsn := parallelDSN(t)
	cancelled := make(chan struct{}, 1)
	tg := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			cancelled <- struct{}{}
		case <-time.After(10 * time.Second):
		}
	})
	// A lease of 3 s, renewed every second: at 300 ms a loaded machine
	// let it expire before the worker marked the run started (the start
	// is fenced too), and the test waited for a run never marked running.
	in := startReactor(t, dsn, Config{LeaseDuration: 3 * time.Second, ReaperInterval: time.Hour})
	lost := in.bus.Subscribe(16, func(e chronos.Event) bool { return e.Type == chronos.EventLeaseLost })
	defer lost.Close()
	job := createJob(t, in.db, &chronos.Job{TargetURL: tg.URL})
	run := in.trigger(t, job.ID)
	eventually(t, 20*time.Second, "the call in flight", func() bool { return tg.inFlight.Load() == 1 })
	// A call in flight this long has been marked running, so it is the
	// renewal that finds the lease gone.
	eventually(t, 20*time.Second, "the run marked running", func() bool {
		return runOf(t, in.db, run.ID).Status == chronos.StatusRunning
	})

	// Another worker takes the run over, as after a reclaim and a new claim.
	if _, err := in.db.Pool.Exec(t.Context(),
		`UPDATE job_runs SET leased_by = 'thief', attempt_count = attempt_count + 1,
		        leased_until = now() + interval '1 hour' WHERE id = $1`, run.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case <-cancelled:
	case <-time.After(20 * time.Second):
		t.Fatal("the call was not cancelled after the lease was lost")
	}
	select {
	case e := <-lost.C():
		if e.RunID != run.ID {
			t.Errorf("lease lost for run %d, want %d", e.RunID, run.ID)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no EventLeaseLost")
	}
	got := runOf(t, in.db, run.ID)
	if got.Status != chronos.StatusRunning || got.LeasedBy == nil || *got.LeasedBy != "thief" || got.AttemptCount != 2 {
		t.Errorf("run is %s, attempt %d, leased by %v; the stale worker must not touch it", got.Status, got.AttemptCount, got.LeasedBy)
	}
}
