package tests

import (
	"testing"
	"time"

	"github.com/chronoshq/chronos"
)

// Ticket 11: a run whose worker always vanishes is reclaimed at most
// max_retries times, then dead-letters with "lease expired";
// attempt_count grows with every reclaim.
func TestTicket11ReclaimedRunsCount(t *testing.T) {
	const maxRetries = 2
	db, ctx, run := smTriggered(t, maxRetries)
	reclaims := 0
	for attempt := 1; ; attempt++ {
		if attempt > maxRetries+2 {
			t.Fatalf("still not dead after %d vanished attempts", attempt-1)
		}
		c := smClaim(t, db, "vanishing-worker", 50*time.Millisecond)
		if c.Run.AttemptCount != attempt {
			t.Fatalf("claim %d: attempt_count %d", attempt, c.Run.AttemptCount)
		}
		if attempt%2 == 0 { // vanish both before and after starting
			if err := db.Start(ctx, c.Lease()); err != nil {
				t.Fatal(err)
			}
		}
		smWaitExpired(t, db, run.ID)
		res, err := db.Reclaim(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		r := smRun(t, db, run.ID)
		if r.AttemptCount != attempt || r.LastError == nil || *r.LastError != chronos.LeaseExpiredError {
			t.Fatalf("after reclaim %d: attempt_count %d, last_error %v", attempt, r.AttemptCount, r.LastError)
		}
		if res.Dead == 1 {
			if r.Status != chronos.StatusDead || res.Reclaimed != 0 {
				t.Fatalf("dead-letter: %+v, status %s", res, r.Status)
			}
			break
		}
		if res.Reclaimed != 1 || r.Status != chronos.StatusPending {
			t.Fatalf("reclaim %d: %+v, status %s", attempt, res, r.Status)
		}
		reclaims++
	}
	if reclaims != maxRetries {
		t.Fatalf("reclaimed back to pending %d times, want max_retries = %d", reclaims, maxRetries)
	}
	r := smRun(t, db, run.ID)
	if r.AttemptCount != maxRetries+1 || len(r.Attempts) != maxRetries+1 || r.FinishedAt == nil {
		t.Fatalf("dead run: attempt_count %d, %d attempt rows", r.AttemptCount, len(r.Attempts))
	}
	for _, a := range r.Attempts {
		if a.Error == nil || *a.Error != chronos.LeaseExpiredError || a.FinishedAt == nil {
			t.Errorf("attempt %d does not say the lease expired: %+v", a.Attempt, a)
		}
	}
}
