package sql_test

import (
	"context"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// heldOrigin is the origin the tests of this file hold back.
const heldOrigin = "http://held.example:8080"

// heldAndFine is parallelDB with two jobs and no runs: bad, whose target
// is on heldOrigin, and good, on another origin that is never held.
func heldAndFine(t *testing.T) (db *sql.DB, ctx context.Context, bad, good *chronos.Job) {
	t.Helper()
	db, ctx = parallelDB(t)
	return db, ctx, hostJob(t, db, heldOrigin+"/a", 0), hostJob(t, db, "http://fine.example/b", 0)
}

// Migration 029: a session's first run created while nothing is held
// plans the host trigger's hold branch (so the first deferral does not
// make every pooled connection plan it at once), and the branch still
// moves the held host's new runs, and only those, once a hold begins.
func TestHostInsertPlansItsHoldBranchAhead(t *testing.T) {
	db, ctx, bad, good := heldAndFine(t)
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	planned := func() string {
		t.Helper()
		var s *string
		if err := conn.QueryRow(ctx, `SELECT current_setting('chronos.host_insert_planned', true)`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		if s == nil {
			return ""
		}
		return *s
	}
	if _, err := conn.Exec(ctx, `RESET chronos.host_insert_planned`); err != nil {
		t.Fatal(err)
	}
	if got := planned(); got != "" {
		t.Fatalf("planned before any insert: %q", got)
	}
	insert := func(jobID int64) time.Time {
		t.Helper()
		var id int64
		if err := conn.QueryRow(ctx, `INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at)
			VALUES ($1, now(), 'manual', now()) RETURNING id`, jobID).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return mustRun(t, db, id).AvailableAt
	}
	before := time.Now()
	if at := insert(bad.ID); at.After(before.Add(time.Minute)) {
		t.Fatalf("run created while nothing is held is due at %v", at)
	}
	if got := planned(); got != "on" {
		t.Fatalf("after the session's first insert: planned = %q, want on", got)
	}
	until := time.Now().Add(time.Hour).Truncate(time.Microsecond)
	if _, err := db.Pool.Exec(ctx, `INSERT INTO hosts (origin, deferred_until, held_until) VALUES ($1, $2, $2)`,
		heldOrigin, until); err != nil {
		t.Fatal(err)
	}
	// The held origin's new run is due a second (sql.holdLead) after the
	// hold's end; the other origin's at once.
	if at := insert(bad.ID); !at.Equal(until.Add(time.Second + time.Millisecond)) {
		t.Fatalf("held origin's new run due at %v, want %v", at, until.Add(time.Second+time.Millisecond))
	}
	if at := insert(good.ID); at.After(time.Now().Add(time.Minute)) {
		t.Fatalf("other origin's new run due at %v under the hold", at)
	}
}

// NextAvailable walks at most nextAvailableWalk (32) runs a host holds
// back: past that it answers the last one's instant, a lower bound of the
// next clear run (the dispatcher asks again then), not the clear run
// behind the whole held backlog. With fewer held, or nothing held, it
// answers the exact instant as before.
func TestNextAvailableBoundsTheWalkPastHeldRuns(t *testing.T) {
	db, ctx, bad, good := heldAndFine(t)
	base := time.Now().Add(time.Hour).Truncate(time.Second).UTC()
	// 40 runs of the held origin, a millisecond apart from base, then
	// the other origin's run a minute later: all inserted before the
	// hold begins, as a backlog the hold leaves in place.
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at)
		SELECT $1, now(), 'manual', $2::timestamptz + i * interval '1 millisecond' FROM generate_series(0, 39) i`,
		bad.ID, base); err != nil {
		t.Fatal(err)
	}
	goodAt := base.Add(time.Minute)
	if _, err := db.Pool.Exec(ctx, `INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at)
		VALUES ($1, now(), 'manual', $2)`, good.ID, goodAt); err != nil {
		t.Fatal(err)
	}
	next := func() *time.Time {
		t.Helper()
		at, err := db.NextAvailable(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return at
	}
	if at := next(); at == nil || !at.Equal(base) {
		t.Fatalf("nothing held: next %v, want %v", at, base)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO hosts (origin, deferred_until, held_until) VALUES ($1, $2, $2)`,
		heldOrigin, base.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	// 40 held: the 32nd's instant, no later than the clear run.
	if at, want := next(), base.Add(31*time.Millisecond); at == nil || !at.Equal(want) {
		t.Fatalf("40 runs held: next %v, want %v (the 32nd)", at, want)
	}
	// 10 held: the walk reaches the clear run.
	if _, err := db.Pool.Exec(ctx, `DELETE FROM job_runs WHERE job_id = $1 AND available_at >= $2`,
		bad.ID, base.Add(10*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if at := next(); at == nil || !at.Equal(goodAt) {
		t.Fatalf("10 runs held: next %v, want %v", at, goodAt)
	}
	// Only held runs: nothing.
	if _, err := db.Pool.Exec(ctx, `DELETE FROM job_runs WHERE job_id = $1`, good.ID); err != nil {
		t.Fatal(err)
	}
	if at := next(); at != nil {
		t.Fatalf("only held runs: next %v, want nil", at)
	}
}
