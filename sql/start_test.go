package sql_test

import (
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// StartMany starts every lease it is given that still holds, in one
// statement, with each attempt's row, and leaves out the one that does
// not; a second start of the same leases changes nothing.
func TestStartManyFencesEachLease(t *testing.T) {
	db, ctx, j := parallelJob(t, "0 0 1 1 *")
	insertPending(t, db, j.ID, 4)
	claimed, err := db.Claim(ctx, "w", 4, time.Minute)
	if err != nil || len(claimed) != 4 {
		t.Fatalf("claim: %d runs, %v", len(claimed), err)
	}
	leases := make([]sql.Lease, 4)
	for i, c := range claimed {
		leases[i] = c.Lease()
	}
	stale := leases[2]
	leases[2].Attempt++ // a lease the run no longer has
	// Out of id order: StartMany orders them itself.
	leases[0], leases[3] = leases[3], leases[0]

	for round := range 2 {
		started, err := db.StartMany(ctx, leases)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range leases {
			if want := l.RunID != stale.RunID; started[l.RunID] != want {
				t.Fatalf("round %d: run %d started %v, want %v", round, l.RunID, started[l.RunID], want)
			}
		}
	}
	for _, c := range claimed {
		r := mustRun(t, db, c.Run.ID)
		var attempts int
		if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM run_attempts WHERE run_id = $1 AND attempt = 1", c.Run.ID).Scan(&attempts); err != nil {
			t.Fatal(err)
		}
		if c.Run.ID == stale.RunID {
			if r.Status != chronos.StatusLeased || r.StartedAt != nil || attempts != 0 {
				t.Fatalf("the run of the stale lease was written: %s, started %v, %d attempt rows", r.Status, r.StartedAt, attempts)
			}
			continue
		}
		if r.Status != chronos.StatusRunning || r.StartedAt == nil || attempts != 1 {
			t.Fatalf("run %d: %s, started %v, %d attempt rows; want running, started, 1", c.Run.ID, r.Status, r.StartedAt, attempts)
		}
	}
	if started, err := db.StartMany(ctx, nil); err != nil || len(started) != 0 {
		t.Fatalf("no leases: %v, %v", started, err)
	}
}
