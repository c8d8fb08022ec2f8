package sql_test

import (
	"errors"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// ReleaseMany hands a batch of claimed runs back in one statement, each
// fenced on its own lease: the live ones go back to pending with their
// attempt undone (an attempt row a start wrote is forgotten), and a stale
// lease, a run another worker holds now, is refused alone.
func TestReleaseManyHandsBackEachLiveLease(t *testing.T) {
	db, ctx, j := parallelJob(t, "0 0 1 1 *")
	insertPending(t, db, j.ID, 4)
	got, err := db.Claim(ctx, "w", 4, time.Minute)
	if err != nil || len(got) != 4 {
		t.Fatalf("claim: %d runs, %v", len(got), err)
	}
	started := got[0].Lease()
	if err := db.Start(ctx, started); err != nil {
		t.Fatal(err)
	}
	// The third run's lease goes stale: released by another path and
	// claimed again by another worker.
	stale := got[2].Lease()
	if err := db.Release(ctx, stale); err != nil {
		t.Fatal(err)
	}
	again := claimOne(t, db, "other", time.Minute)
	if again.Run.ID != stale.RunID {
		t.Fatalf("the other worker claimed run %d, want %d", again.Run.ID, stale.RunID)
	}

	leases := []sql.Lease{got[0].Lease(), got[1].Lease(), stale, got[3].Lease()}
	errs, err := db.ReleaseMany(ctx, leases)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range leases {
		r := mustRun(t, db, l.RunID)
		if i == 2 {
			if !errors.Is(errs[i], sql.ErrLeaseLost) {
				t.Errorf("the stale lease: %v, want ErrLeaseLost", errs[i])
			}
			if r.Status != chronos.StatusLeased || r.LeasedBy == nil || *r.LeasedBy != "other" || r.AttemptCount != 1 {
				t.Errorf("the run the other worker holds: %s by %v, attempt %d; want still leased to other, attempt 1",
					r.Status, r.LeasedBy, r.AttemptCount)
			}
			continue
		}
		if errs[i] != nil {
			t.Errorf("run %d: %v", l.RunID, errs[i])
		}
		if r.Status != chronos.StatusPending || r.LeasedBy != nil || r.AttemptCount != 0 || r.StartedAt != nil || len(r.Attempts) != 0 {
			t.Errorf("released run %d: %s, leased by %v, attempt %d, started %v, %d attempt rows; want pending, unleased, attempt 0, no start, no row",
				l.RunID, r.Status, r.LeasedBy, r.AttemptCount, r.StartedAt, len(r.Attempts))
		}
	}

	// Handed back twice: the second time every lease is gone.
	errs, err = db.ReleaseMany(ctx, leases[:2])
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range errs {
		if !errors.Is(e, sql.ErrLeaseLost) {
			t.Errorf("lease %d released again: %v, want ErrLeaseLost", i, e)
		}
	}
	if errs, err := db.ReleaseMany(ctx, nil); err != nil || len(errs) != 0 {
		t.Errorf("nothing to release: %v, %v", errs, err)
	}
}
