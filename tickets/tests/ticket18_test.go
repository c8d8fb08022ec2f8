package tests

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/reactor"
	"github.com/chronoshq/chronos/reactor/reactortest"
)

// Ticket 18: LISTEN/NOTIFY wake-up. With IDLE_POLL_INTERVAL at a minute, a
// run created on instance A starts at once (milliseconds) on instance B: B's
// listener hears the insert's NOTIFY and its dispatcher claims at once.
// A creates the run with no local publish, and A runs no workers (an API
// replica), so only B's LISTEN path can explain the start.
func TestTicket18NotifyWakesAnotherInstance(t *testing.T) {
	dsn := parallelDSN(t)
	arrived := make(chan time.Time, 16)
	tg := rxNewTarget(t, func(w http.ResponseWriter, r *http.Request) { arrived <- time.Now() })
	cfg := reactor.Config{IdlePollInterval: time.Minute}
	a := rxStart(t, dsn, "t18-a", rxOptions{Listener: true})
	b := rxStart(t, dsn, "t18-b", rxOptions{Reactor: true, Listener: true, Config: cfg})
	job := rxJob(t, a.DB, &chronos.Job{TargetURL: tg.URL})
	// B's start-up claim and NextAvailable are behind it once it leads.
	rxEventually(t, 20*time.Second, "B leads", b.Reactor.IsLeader)

	// Each run must start long before the idle poll (a minute) could
	// explain it: the bound is wide, for a loaded machine. The delays
	// themselves (milliseconds on a quiet one) are logged.
	const bound = 20 * time.Second
	var delays []time.Duration
	for i := range 7 {
		run := a.TriggerSilently(t, job.ID)
		committed := time.Now()
		select {
		case at := <-arrived:
			delays = append(delays, at.Sub(committed))
		case <-time.After(bound):
			t.Fatalf("run %d did not start within %s (idle poll is a minute): no LISTEN/NOTIFY wake-up", i, bound)
		}
		r := reactortest.WaitStatus(t, a.DB, run.ID, chronos.StatusSucceeded, 20*time.Second)
		if len(r.Attempts) != 1 || r.Attempts[0].WorkerID != b.Name {
			t.Errorf("run %d attempts %+v, want one by %s", run.ID, r.Attempts, b.Name)
		}
	}
	slices.Sort(delays)
	t.Logf("created on A -> target called by B: %v", delays)
}
