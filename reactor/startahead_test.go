package reactor

import (
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

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
