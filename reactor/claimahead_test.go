package reactor

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/reactor/reactortest"
	"github.com/chronoshq/chronos/sql"
)

// Runs claimed ahead of their instant (ClaimAhead, here far wider than the
// default so that every run is) are delivered at it, never before: each
// request arrives at or after its X-Chronos-Scheduled-At, by the one
// machine clock the database and the target share.
func TestClaimedAheadIsSentAtItsInstant(t *testing.T) {
	dsn := parallelDSN(t)
	var (
		mu    sync.Mutex
		early []string
		hits  = map[string]time.Time{}
	)
	tg := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		sched, err := time.Parse(time.RFC3339Nano, r.Header.Get("X-Chronos-Scheduled-At"))
		mu.Lock()
		defer mu.Unlock()
		if err != nil || at.Before(sched) {
			early = append(early, r.Header.Get("X-Chronos-Run-Id")+" at "+at.Format(time.RFC3339Nano)+
				" scheduled "+r.Header.Get("X-Chronos-Scheduled-At"))
		}
		hits[r.Header.Get("X-Chronos-Run-Id")] = at
		w.WriteHeader(http.StatusNoContent)
	})
	in := startReactor(t, dsn, Config{ClaimAhead: 300 * time.Millisecond})
	runAt := time.Now().Add(1500 * time.Millisecond).UTC()
	const n = 20
	for i := range n {
		j := &chronos.Job{Name: fmt.Sprintf("ahead-%d", i), RunAt: &runAt, TargetURL: tg.URL, Enabled: true}
		reactortest.CreateJob(t, in.db, j)
	}
	reactortest.Eventually(t, 30*time.Second, "every run delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(hits) == n
	})
	mu.Lock()
	defer mu.Unlock()
	if len(early) > 0 {
		t.Fatalf("delivered before their instant: %v", early)
	}
}

// A run claimed ahead and still waiting for its instant when the shutdown
// grace runs out was never sent: it goes back to pending with its attempt
// uncounted, and nothing is left leased.
func TestShutdownReleasesRunsWaitingForTheirInstant(t *testing.T) {
	dsn := parallelDSN(t)
	tg := newTarget(t, nil)
	// 15 s ahead: on a loaded machine, the claim and the stop took more
	// than the 5 s this once had, and the run went out before the stop.
	in := startReactor(t, dsn, Config{Lookahead: 20 * time.Second, ClaimAhead: 20 * time.Second,
		ShutdownTimeout: 100 * time.Millisecond})
	runAt := time.Now().Add(15 * time.Second).UTC()
	j := reactortest.CreateJob(t, in.db, &chronos.Job{Name: "waits", RunAt: &runAt, TargetURL: tg.URL, Enabled: true})
	runID := waitLeased(t, in, j.ID)
	if err := in.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n := tg.Hits.Load(); n != 0 || time.Now().After(runAt) {
		t.Fatalf("the target got %d requests; shutdown ended %v after the run's instant", n, time.Since(runAt))
	}
	if r := runOf(t, in.db, runID); r.Status != chronos.StatusPending || r.AttemptCount != 0 || r.LeasedBy != nil {
		t.Fatalf("unsent run after shutdown: %+v, want pending with no attempt counted", r)
	}
}

// waitLeased waits until job's one run is leased (claimed ahead, here)
// and returns its id.
func waitLeased(t *testing.T, in *instance, jobID int64) int64 {
	t.Helper()
	var id int64
	reactortest.Eventually(t, 30*time.Second, "the run claimed ahead", func() bool {
		err := in.db.Pool.QueryRow(t.Context(),
			"SELECT id FROM job_runs WHERE job_id = $1 AND status = 'leased'", jobID).Scan(&id)
		return err == nil
	})
	return id
}

// A pause answered while a run is claimed ahead of its instant (leased,
// its worker waiting for the instant) stops that run: it is never sent,
// and nothing of it is left leased. ClaimAhead is far wider than the
// default here, and the lookahead longer than the wait for the instant,
// so the pause lands inside the window for sure (the run is due 6 s after
// its creation, materialized and claimed at once: a loaded machine may
// take seconds to do that).
func TestPauseStopsARunClaimedAhead(t *testing.T) {
	dsn := parallelDSN(t)
	tg := newTarget(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	// The pause must land while the run waits for its instant: at 6 s
	// ahead a CI run under the long fault tests answered it after the
	// instant, when the run had rightly gone out.
	in := startReactor(t, dsn, Config{ClaimAhead: 15 * time.Second, Lookahead: 18 * time.Second})
	runAt := time.Now().Add(12 * time.Second).UTC()
	j := reactortest.CreateJob(t, in.db, &chronos.Job{Name: "paused-ahead", RunAt: &runAt, TargetURL: tg.URL, Enabled: true})
	waitLeased(t, in, j.ID)
	if _, err := in.db.UpdateJob(t.Context(), j.ID, &chronos.JobUpdate{Enabled: chronos.Some(false)}); err != nil {
		t.Fatal(err)
	}
	if paused := time.Now(); !paused.Before(runAt) {
		t.Fatalf("the pause was answered at %s, after the run's instant %s: the machine is too slow for this test to say anything", paused, runAt)
	}
	// Well past the instant: the worker would have sent it by now.
	time.Sleep(time.Until(runAt) + 500*time.Millisecond) // the instant must pass: nothing else says "not sent"
	if n := tg.hits.Load(); n != 0 {
		t.Fatalf("the target received %d requests after the pause was answered", n)
	}
	in.noneLeased(t, "after the pause (the paused job's is the only run)")
}

// A one-shot whose run_at moved while its run was claimed ahead fires
// once, at the new time, never at both.
func TestMovedOneShotClaimedAheadFiresOnce(t *testing.T) {
	dsn := parallelDSN(t)
	var (
		mu   sync.Mutex
		hits []time.Time
	)
	tg := newTarget(t, func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		hits = append(hits, time.Now())
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	// The move must land while the run waits for its instant: 10 s ahead
	// leaves a loaded machine time to materialize, claim and edit (at 6 s
	// a make test under load moved it after the instant, when the run had
	// started and rightly went out at the first time).
	in := startReactor(t, dsn, Config{ClaimAhead: 12 * time.Second, Lookahead: 15 * time.Second})
	first := time.Now().Add(10 * time.Second).UTC()
	j := reactortest.CreateJob(t, in.db, &chronos.Job{Name: "moved-ahead", RunAt: &first, TargetURL: tg.URL, Enabled: true})
	waitLeased(t, in, j.ID)
	second := first.Add(time.Second)
	if _, err := in.db.UpdateJob(t.Context(), j.ID, &chronos.JobUpdate{RunAt: chronos.Some(second)}); err != nil {
		t.Fatal(err)
	}
	if moved := time.Now(); !moved.Before(first) {
		t.Fatalf("the move was answered at %s, after the run's instant %s: the machine is too slow for this test to say anything", moved, first)
	}
	reactortest.Eventually(t, 30*time.Second, "the moved one-shot delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(hits) > 0
	})
	time.Sleep(500 * time.Millisecond) // a second delivery would come at once
	mu.Lock()
	defer mu.Unlock()
	if len(hits) != 1 || hits[0].Before(second) {
		t.Fatalf("deliveries at %v, want one at or after %v", hits, second)
	}
}

// The runs of one claim taken ahead of one instant share one start,
// written a lead before the earliest of their Due times; runs due at
// another instant get another, and runs claimed as due get none.
func TestGroupAheadByInstant(t *testing.T) {
	base := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	now := time.Now()
	run := func(id int64, at time.Time, wait time.Duration) sql.Claimed {
		worker := "w"
		c := sql.Claimed{Run: &chronos.Run{ID: id, AvailableAt: at, LeasedBy: &worker, AttemptCount: 1}, Wait: wait}
		if wait > 0 {
			c.Due = now.Add(wait)
		}
		return c
	}
	runs := []sql.Claimed{
		run(1, base, 0),
		run(2, base.Add(time.Second), 15*time.Millisecond),
		run(3, base.Add(time.Second).In(time.FixedZone("x", 3600)), 14*time.Millisecond),
		run(4, base.Add(2*time.Second), 18*time.Millisecond),
	}
	g := groupAhead(runs)
	if g[1] != nil {
		t.Fatalf("run 1, claimed as due, has a start group")
	}
	if g[2] == nil || g[2] != g[3] {
		t.Fatalf("runs 2 and 3 are due at one instant: groups %p and %p, want one", g[2], g[3])
	}
	if g[4] == nil || g[4] == g[2] {
		t.Fatalf("run 4 is due at another instant: group %p, want its own", g[4])
	}
	if want := now.Add(14*time.Millisecond - startAheadLead); !g[2].at.Equal(want) {
		t.Fatalf("group of runs 2 and 3 starts at %s, want %s (the earlier Due less the lead)", g[2].at, want)
	}
	if len(g[2].leases) != 2 || len(g[4].leases) != 1 {
		t.Fatalf("leases: %d and %d, want 2 and 1", len(g[2].leases), len(g[4].leases))
	}
}
