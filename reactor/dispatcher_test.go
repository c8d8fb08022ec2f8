package reactor

import (
	"net/http"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
)

func TestDispatcherConcurrencyBound(t *testing.T) {
	dsn := parallelDSN(t)
	tg := newTarget(t, func(w http.ResponseWriter, r *http.Request) { time.Sleep(15 * time.Millisecond) })
	in := startReactor(t, dsn, Config{WorkerConcurrency: 3})
	job := createJob(t, in.db, &chronos.Job{TargetURL: tg.URL})
	const n = 30
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = in.trigger(t, job.ID).ID
	}
	eventually(t, 20*time.Second, "all runs succeeded", func() bool {
		for _, id := range ids {
			if runOf(t, in.db, id).Status != chronos.StatusSucceeded {
				return false
			}
		}
		return true
	})
	if m := tg.maxSeen.Load(); m > 3 {
		t.Errorf("target saw %d requests in flight, concurrency is 3", m)
	} else if m < 2 {
		t.Logf("target saw at most %d in flight (expected the pool to fill)", m)
	}
	if h := tg.hits.Load(); h != n {
		t.Errorf("target hit %d times, want %d", h, n)
	}
}

// With no event at all (the bus is silent: no listener, no local publish),
// the idle poll still picks up a run.
func TestDispatcherIdlePollSafetyNet(t *testing.T) {
	dsn := parallelDSN(t)
	tg := newTarget(t, nil)
	in := startReactor(t, dsn, Config{IdlePollInterval: 300 * time.Millisecond})
	job := createJob(t, in.db, &chronos.Job{TargetURL: tg.URL})
	run, err := in.db.Trigger(t.Context(), job.ID)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the idle poll delivers the run", func() bool {
		return runOf(t, in.db, run.ID).Status == chronos.StatusSucceeded
	})
}

// A retry becomes available in the future; the local dispatcher arms a
// timer for it and does not wait for the idle poll.
func TestDispatcherTimerForRetry(t *testing.T) {
	dsn := parallelDSN(t)
	tg := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(HeaderAttempt) == "1" {
			w.WriteHeader(http.StatusInternalServerError)
		}
	})
	in := startReactor(t, dsn, Config{IdlePollInterval: time.Minute})
	job := createJob(t, in.db, &chronos.Job{TargetURL: tg.URL, MaxRetries: 1,
		Backoff: chronos.BackoffLinear, BackoffBaseSeconds: 0.2, BackoffMaxSeconds: 1})
	run := in.trigger(t, job.ID)
	eventually(t, 20*time.Second, "the retry succeeds", func() bool {
		return runOf(t, in.db, run.ID).Status == chronos.StatusSucceeded
	})
	got := runOf(t, in.db, run.ID)
	if len(got.Attempts) != 2 {
		t.Fatalf("attempts %d, want 2", len(got.Attempts))
	}
	gap := got.Attempts[1].StartedAt.Sub(got.Attempts[0].StartedAt)
	if gap < 200*time.Millisecond {
		t.Errorf("retry after %s, before its 200ms backoff", gap)
	}
}
