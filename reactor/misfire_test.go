package reactor

import (
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/internal/instant"
)

// misfire "all" after a whole-cluster stop: every missed occurrence,
// including those whose runs were created ahead before the stop, reaches
// the target flagged as a catch-up, in order, one after another (each
// request arrives after the previous one was answered), although the job
// allows overlap (issue 22.5).
func TestMisfireAllInOrderAtTheTarget(t *testing.T) {
	dsn := parallelDSN(t)
	const hold = 150 * time.Millisecond
	rec := newRecorder(t, hold)
	// Runs materialized 10 s ahead: some are still pending when the stop
	// ends, even when a loaded machine makes the stop outlast the default
	// 2 s lookahead (which left none, and the test proved nothing). The
	// restart comes 5 s after the last of them was due, so the job is
	// behind its schedule then: a gap.
	const lookahead = 10 * time.Second
	first, stopped, ahead := stopEverySecond(t, dsn, Config{Lookahead: lookahead}, rec, chronos.MisfireAll)
	// Left pending by the stop, whether their instant came before it
	// ended (a stop on a loaded machine may outlast the lookahead) or not.
	if ahead == 0 {
		t.Fatal("no run created ahead left pending when the cluster stopped: the test proves nothing")
	}
	waitDBTime(t, first.db, stopped.Add(lookahead+5*time.Second), 30*time.Second)
	before := len(rec.deliveries())

	second := startReactor(t, dsn, Config{Instance: "restarted"})
	restarted := dbNow(t, second.db)
	// Every occurrence from the job's first delivery up to the restart
	// that the target did not get before the stop is missed, and each
	// must arrive. Not only those after the last run done before the
	// stop: a stop hands a run claimed but not yet sent back to pending,
	// and on a loaded machine that run can be older than one that was
	// delivered.
	delivered := map[time.Time]bool{}
	from := restarted
	for _, d := range rec.deliveries()[:before] {
		delivered[d.sched.UTC()] = true
		from = instant.Earlier(from, d.sched)
	}
	var missed []time.Time
	for at := from.Truncate(time.Second); !at.After(restarted); at = at.Add(time.Second) {
		if !delivered[at.UTC()] {
			missed = append(missed, at.UTC())
		}
	}
	late := func() []recorded {
		var out []recorded
		for _, d := range rec.deliveries()[before:] {
			if !d.sched.After(restarted) {
				out = append(out, d)
			}
		}
		return out
	}
	eventually(t, 60*time.Second, "every missed occurrence delivered", func() bool { return len(late()) >= len(missed) })
	got := late()
	if len(got) != len(missed) {
		t.Fatalf("%d late deliveries, want the %d missed occurrences %v", len(got), len(missed), missed)
	}
	for i, d := range got {
		if !d.sched.Equal(missed[i]) || !d.catchUp {
			t.Errorf("late delivery %d: occurrence %s catch-up %v, want %s flagged (%d were created before the stop)",
				i, d.sched.Format(time.RFC3339), d.catchUp, missed[i].Format(time.RFC3339), ahead)
		}
		if i > 0 && d.at.Sub(got[i-1].at) < hold {
			t.Errorf("late delivery %d arrived %s after the previous one, before it was answered (%s)",
				i, d.at.Sub(got[i-1].at), hold)
		}
	}
}
