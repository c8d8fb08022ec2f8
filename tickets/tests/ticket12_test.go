package tests

import (
	"testing"
	"time"

	"github.com/chronoshq/chronos"
)

// Ticket 12: the reaper reclaims only leases whose leased_until has
// passed. A running run leased for another hour is untouched; a leased
// run whose lease ran out a minute ago is pending again.
func TestTicket12ReaperComparison(t *testing.T) {
	db, ctx, alive := smTriggered(t, 3)
	c := smClaim(t, db, "alive-worker", time.Minute)
	if err := db.Start(ctx, c.Lease()); err != nil {
		t.Fatal(err)
	}
	expired := smTrigger(t, db, alive.JobID)
	smClaim(t, db, "gone-worker", time.Minute)
	_, err := db.Pool.Exec(ctx, `
		UPDATE job_runs SET leased_until = CASE id WHEN $1 THEN now() + interval '1 hour'
		                                          ELSE now() - interval '1 minute' END
		 WHERE id IN ($1, $2)`, alive.ID, expired.ID)
	if err != nil {
		t.Fatal(err)
	}
	before := smRun(t, db, alive.ID)

	res, err := db.Reclaim(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if res.Reclaimed != 1 || res.Dead != 0 {
		t.Fatalf("reclaim: %+v, want exactly the expired run back", res)
	}
	after := smRun(t, db, alive.ID)
	if after.Status != chronos.StatusRunning || after.LeasedBy == nil || *after.LeasedBy != "alive-worker" ||
		!after.LeasedUntil.Equal(*before.LeasedUntil) || after.AttemptCount != 1 || after.LastError != nil {
		t.Fatalf("the reaper touched an active lease: %+v", after)
	}
	got := smRun(t, db, expired.ID)
	if got.Status != chronos.StatusPending || got.LeasedBy != nil || got.AttemptCount != 1 ||
		got.LastError == nil || *got.LastError != chronos.LeaseExpiredError {
		t.Fatalf("expired lease not reclaimed: %+v", got)
	}
}
