package tests

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// Ticket 20: a worker whose lease expired and was reclaimed cannot record
// success or failure over the new attempt: its late writes are rejected
// with ErrLeaseLost and change nothing; the new holder's write works.
func TestTicket20FencingStaleWorker(t *testing.T) {
	db, ctx, run := smTriggered(t, 3)
	old := smClaim(t, db, "worker-a", 50*time.Millisecond)
	if err := db.Start(ctx, old.Lease()); err != nil {
		t.Fatal(err)
	}
	smWaitExpired(t, db, run.ID)
	if res, err := db.Reclaim(ctx, 10); err != nil || res.Reclaimed != 1 {
		t.Fatalf("reclaim: %+v %v", res, err)
	}

	for name, worker := range map[string]string{"same worker": "worker-a", "another worker": "worker-b"} {
		t.Run(name, func(t *testing.T) {
			// Reset to the reclaimed state for each case.
			nw := smClaim(t, db, worker, time.Hour)
			if err := db.Start(ctx, nw.Lease()); err != nil {
				t.Fatal(err)
			}
			before := smRun(t, db, run.ID)
			now := time.Now()
			late := []sql.Outcome{
				{Lease: old.Lease(), Success: true, StatusCode: 200, StartedAt: now, FinishedAt: now},
				{Lease: old.Lease(), StatusCode: 500, Error: "HTTP 500", RetryDelay: time.Hour},
			}
			for _, o := range late {
				res, err := db.Complete(ctx, []sql.Outcome{o})
				if err != nil {
					t.Fatal(err)
				}
				if !errors.Is(res[0].Err, sql.ErrLeaseLost) || res[0].Status != "" {
					t.Fatalf("stale outcome (success=%v) accepted: %+v", o.Success, res[0])
				}
			}
			if err := db.Renew(ctx, old.Lease(), time.Hour); !errors.Is(err, sql.ErrLeaseLost) {
				t.Fatalf("stale renew: %v", err)
			}
			if err := db.Release(ctx, old.Lease()); !errors.Is(err, sql.ErrLeaseLost) {
				t.Fatalf("stale release: %v", err)
			}
			if after := smRun(t, db, run.ID); !reflect.DeepEqual(before, after) {
				t.Fatalf("stale writes changed the run:\nbefore %+v\nafter  %+v", before, after)
			}
			// The current holder hands it back so the next case can claim it.
			if err := db.Release(ctx, nw.Lease()); err != nil {
				t.Fatal(err)
			}
		})
	}

	nw := smClaim(t, db, "worker-b", time.Hour)
	res, err := db.Complete(ctx, []sql.Outcome{{Lease: nw.Lease(), Success: true, StatusCode: 200}})
	if err != nil || res[0].Err != nil || res[0].Status != chronos.StatusSucceeded {
		t.Fatalf("current holder's write: %+v %v", res, err)
	}
	if r := smRun(t, db, run.ID); r.Status != chronos.StatusSucceeded || r.AttemptCount != 2 {
		t.Fatalf("run after the current holder's success: %+v", r)
	}
}
