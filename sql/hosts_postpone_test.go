package sql_test

import (
	"errors"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// Postpone hands a claimed run back uncounted (no attempt, no deferral)
// and moves the origin's other due runs with it, not another origin's;
// Alone moves the run only; a stale lease is refused. The delays are a
// minute: a loaded CI run took over the 2 s this test once waited, and
// the postponed runs were due again when it claimed.
func TestPostponeMovesTheOriginsDueRuns(t *testing.T) {
	db, ctx := parallelDB(t)
	slow := hostJob(t, db, "http://127.0.0.1:9/a", 1)
	slowToo := hostJob(t, db, "http://127.0.0.1:9/b", 3)
	other := hostJob(t, db, "http://127.0.0.1:10/a", 2)
	origin := chronos.Origin(slow.TargetURL)

	c, err := db.Claim(ctx, "w", 1, time.Minute)
	if err != nil || len(c) != 1 || c[0].Run.JobID != slow.ID {
		t.Fatalf("claim: %v %d", err, len(c))
	}
	claimed := c[0]
	before := time.Now()
	res, err := db.Postpone(ctx, sql.Postponement{Lease: claimed.Lease(), Origin: origin, Delay: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res.Moved != 3 || res.Until.Before(before.Add(55*time.Second)) {
		t.Fatalf("postpone: %+v", res)
	}
	r := mustRun(t, db, claimed.Run.ID)
	if r.Status != chronos.StatusPending || r.AttemptCount != 0 || r.AvailableAt.Before(res.Until) ||
		r.LeasedBy != nil || r.StartedAt != nil {
		t.Fatalf("postponed run: %+v", r)
	}
	var deferrals int
	if err := db.Pool.QueryRow(ctx, `SELECT deferrals FROM job_runs WHERE id = $1`, r.ID).Scan(&deferrals); err != nil || deferrals != 0 {
		t.Fatalf("deferrals %d (%v): a postponement is not a deferral", deferrals, err)
	}
	// Only the other origin's runs are claimable now.
	got := jobsOf(claimAll(t, db))
	if got[other.ID] != 2 || got[slow.ID]+got[slowToo.ID] != 0 {
		t.Fatalf("claimed after the postponement: %v", got)
	}
	// No host row is made for it: the host is not in trouble.
	_, err = db.Host(ctx, origin)
	wantCode(t, err, chronos.ENOTFOUND)

	// Alone: a run created since is due now; postponing another run alone
	// leaves it due.
	insertPending(t, db, slowToo.ID, 2)
	c, err = db.Claim(ctx, "w", 1, time.Minute)
	if err != nil || len(c) != 1 {
		t.Fatalf("claim: %v %d", err, len(c))
	}
	res, err = db.Postpone(ctx, sql.Postponement{Lease: c[0].Lease(), Origin: origin, Delay: time.Minute, Alone: true})
	if err != nil || res.Moved != 0 {
		t.Fatalf("postpone alone: %+v %v", res, err)
	}
	if got := jobsOf(claimAll(t, db)); got[slowToo.ID] != 1 {
		t.Fatalf("claimed after postponing alone: %v, want the other new run", got)
	}
	// A stale lease is refused.
	stale := c[0].Lease()
	if _, err := db.Postpone(ctx, sql.Postponement{Lease: stale, Origin: origin, Delay: time.Second}); !errors.Is(err, sql.ErrLeaseLost) {
		t.Fatalf("postpone with a stale lease: %v", err)
	}
}
