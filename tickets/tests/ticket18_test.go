package tests

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/reactor"
	"github.com/chronoshq/chronos/reactor/reactortest"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// Ticket 18: LISTEN/NOTIFY wake-up. With IDLE_POLL_INTERVAL at a minute, a
// run created on instance A starts within milliseconds on instance B: B's
// listener hears the insert's NOTIFY and its dispatcher claims at once.
// A creates the run with no local publish, and A runs no workers (an API
// replica), so only B's LISTEN path can explain the start.
func TestTicket18NotifyWakesAnotherInstance(t *testing.T) {
	t.Parallel()
	dsn := sqltest.NewURL(t)
	arrived := make(chan time.Time, 16)
	tg := rxNewTarget(t, func(w http.ResponseWriter, r *http.Request) { arrived <- time.Now() })
	cfg := reactor.Config{IdlePollInterval: time.Minute}
	a := rxStart(t, dsn, "t18-a", rxOptions{Listener: true})
	b := rxStart(t, dsn, "t18-b", rxOptions{Reactor: true, Listener: true, Config: cfg})
	job := rxJob(t, a.DB, &chronos.Job{TargetURL: tg.URL})
	// B's start-up claim and NextAvailable are behind it once it leads.
	rxEventually(t, 5*time.Second, "B leads", b.Reactor.IsLeader)

	// Each run must start long before the idle poll could explain it, and
	// the typical (median) one within 100ms: a single slow one on a
	// loaded CI machine is not the invariant breaking.
	const bound = 100 * time.Millisecond
	var delays []time.Duration
	for i := range 7 {
		run := a.TriggerSilently(t, job.ID)
		committed := time.Now()
		select {
		case at := <-arrived:
			delays = append(delays, at.Sub(committed))
		case <-time.After(5 * time.Second):
			t.Fatalf("run %d did not start within 5s (idle poll is a minute): no LISTEN/NOTIFY wake-up", i)
		}
		r := reactortest.WaitStatus(t, a.DB, run.ID, chronos.StatusSucceeded, 5*time.Second)
		if len(r.Attempts) != 1 || r.Attempts[0].WorkerID != b.Name {
			t.Errorf("run %d attempts %+v, want one by %s", run.ID, r.Attempts, b.Name)
		}
	}
	slices.Sort(delays)
	if m := delays[len(delays)/2]; m > bound {
		t.Errorf("runs started a median %s after they were created (all: %v), want within %s", m, delays, bound)
	}
	t.Logf("created on A -> target called by B: %v", delays)
}
