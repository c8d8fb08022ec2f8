package sql_test

import (
	"testing"
	"time"
)

// A run its rate limit holds is waiting for room, not missed: a gap that
// begins after it (the leader stalls) must not fold it away, least of all
// once a later run of the job has been delivered past it. Found by the
// model test (-model.seed=43 -model.seq=2 -model.ops=20s -model.dc=40
// -model.slowrates): a per-second job's runs for :39 and :40 were held by
// a slow rate while the leader, which releases held runs, was frozen; the
// run for :41, due after the bucket refilled, was claimed straight from
// the index and delivered; the first pass after the freeze folded :39 and
// :40 into the catch-up of :42-:45, so they never ran, and the catch-up
// came after :41's delivery, not in their place.
//
// Here: a job every 10 s under a limit of one run per 2 s. A and B are
// created ahead while the job is kept ahead, come due and are held (the
// bucket is empty); C, due once the bucket has refilled, is claimed and
// delivered. Then the leader stalls for 25 s, and its first pass folds.
func TestRateHeldRunsSurviveALaterGap(t *testing.T) {
	db, ctx := parallelDB(t)
	putLimit(t, db, "slow", nil, ptr(1), ptr(2)) // one token every 2 s; the bucket starts full (1)
	r0 := dbNow(t, db)
	c := r0.Truncate(time.Second).Add(4 * time.Second) // C: 3 to 4 s from now
	a, b := c.Add(-20*time.Second), c.Add(-10*time.Second)
	j := cronJob("@every 10s")
	j.StartsAt = ptr(c.Add(-30 * time.Second)) // occurrences ..., A, B, C, C+10s, ...
	j.LimitKey = ptr("slow")
	mustCreate(t, db, j)

	// The bucket's one token goes to a manual run.
	insertPending(t, db, j.ID, 1)
	got, err := db.Claim(ctx, "w", 10, time.Minute)
	if err != nil || len(got) != 1 {
		t.Fatalf("claim the manual run: %d runs, %v", len(got), err)
	}
	succeed(t, db, got)

	// A working leader creates A and B ahead (its clock simulated), and
	// keeps the job ahead: next_run_at is C, not yet due.
	setNextRunAt(t, db, j.ID, ptr(a))
	for _, at := range []time.Time{a, b} {
		if res, err := db.Materialize(ctx, at.Add(-500*time.Millisecond), 2*time.Second, 10); err != nil || res.Created != 1 || len(res.CatchUps) != 0 {
			t.Fatalf("create the run for %s ahead: %+v %v", at.Format("15:04:05"), res, err)
		}
	}
	// A and B are due: the empty bucket holds them.
	if got, err := db.Claim(ctx, "w", 10, time.Minute); err != nil || len(got) != 0 {
		t.Fatalf("claim with the bucket empty: %d runs, %v; want A and B held", len(got), err)
	}
	// C is created ahead, comes due after the bucket refilled, and is
	// claimed (A and B wait out of the claim's index for a release: the
	// leader's, which is about to stall) and delivered.
	if res, err := db.Materialize(ctx, c.Add(-1500*time.Millisecond), 2*time.Second, 10); err != nil || res.Created != 1 {
		t.Fatalf("create the run for C ahead: %+v %v", res, err)
	}
	for dbNow(t, db).Before(c.Add(50 * time.Millisecond)) {
		time.Sleep(20 * time.Millisecond)
	}
	got, err = db.Claim(ctx, "w", 10, time.Minute)
	if err != nil || len(got) != 1 || !got[0].Run.ScheduledAt.Equal(c) {
		t.Fatalf("claim once C is due: %d runs, %v; want C's run", len(got), err)
	}
	succeed(t, db, got)

	// The leader stalls after materializing C (next_run_at C+10s) and
	// comes back 25 s later: a gap (C+10s, C+20s), one catch-up for it.
	res, err := db.Materialize(ctx, c.Add(25*time.Second), 2*time.Second, 10)
	if err != nil || len(res.CatchUps) != 1 || !res.CatchUps[0].At.Equal(c.Add(20*time.Second)) {
		t.Fatalf("first pass after the gap: %+v %v; want one catch-up at %s", res, err, c.Add(20*time.Second).Format("15:04:05"))
	}
	for _, at := range []time.Time{a, b} {
		var n int
		if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM job_runs WHERE job_id = $1 AND trigger = 'schedule' AND scheduled_at = $2",
			j.ID, at).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("occurrence %s (due while the job was ahead, held by its rate, older than C's run, delivered already) has %d runs, want 1: "+
				"the gap's fold deleted it (catch-up %+v)", at.Format("15:04:05"), n, res.CatchUps[0])
		}
	}
}
