package sql_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// 8 concurrent claimers over 2,000 pending runs hand out every run
// exactly once.
func TestClaimConcurrentExactlyOnce(t *testing.T) {
	db, ctx, j := parallelJob(t, "0 0 1 1 *")
	const total = 2000
	insertPending(t, db, j.ID, total)

	var (
		mu   sync.Mutex
		seen = map[int64]string{}
		wg   sync.WaitGroup
	)
	for w := range 8 {
		worker := fmt.Sprintf("w%d", w)
		wg.Go(func() {
			for {
				got, err := db.Claim(ctx, worker, 7+w, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, c := range got {
					if prev, dup := seen[c.Run.ID]; dup {
						t.Errorf("run %d claimed by %s and %s", c.Run.ID, prev, worker)
					}
					seen[c.Run.ID] = worker
					if c.Run.Status != chronos.StatusLeased || c.Run.AttemptCount != 1 || *c.Run.LeasedBy != worker ||
						c.Job == nil || c.Job.ID != j.ID || c.Run.LeasedUntil == nil {
						t.Errorf("claimed run %+v job %+v", c.Run, c.Job)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != total {
		t.Fatalf("%d runs claimed, want %d", len(seen), total)
	}
	var pending int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM job_runs WHERE status <> 'leased' OR attempt_count <> 1").Scan(&pending); err != nil {
		t.Fatal(err)
	}
	if pending != 0 {
		t.Fatalf("%d runs not leased exactly once", pending)
	}
}

func TestClaimOrderAndAvailability(t *testing.T) {
	db, ctx, j := parallelJob(t, "0 0 1 1 *")
	_, err := db.Pool.Exec(ctx, `
		INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at) VALUES
		($1, now(), 'manual', now() - interval '1 minute'),
		($1, now(), 'manual', now() - interval '2 minutes'),
		($1, now(), 'manual', now() + interval '1 hour')`, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	next, err := db.NextAvailable(ctx)
	if err != nil || next == nil || time.Until(*next) > -time.Minute {
		t.Fatalf("next available %v %v", next, err)
	}
	got, err := db.Claim(ctx, "w", 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[0].Run.AvailableAt.Before(got[1].Run.AvailableAt) {
		t.Fatalf("claimed %d runs (future one must wait), oldest first", len(got))
	}
	next, err = db.NextAvailable(ctx)
	if err != nil || next == nil || time.Until(*next) < 50*time.Minute {
		t.Fatalf("next available after claim %v %v", next, err)
	}
}

// The whole life of a run, with every fenced write rejected once the
// lease is someone else's.
func TestRunLifecycleAndFencing(t *testing.T) {
	db, ctx, j := parallelJob(t, "0 0 1 1 *", func(j *chronos.Job) { j.MaxRetries = 1 })
	r, err := db.Trigger(ctx, j.ID)
	if err != nil || r.Trigger != chronos.TriggerManual || r.Status != chronos.StatusPending {
		t.Fatalf("trigger: %+v %v", r, err)
	}
	_, err = db.Trigger(ctx, 424242)
	wantCode(t, err, chronos.ENOTFOUND)

	c := claimOne(t, db, "a", time.Minute)
	l := c.Lease()
	if l.RunID != r.ID || l.Worker != "a" || l.Attempt != 1 {
		t.Fatalf("lease %+v", l)
	}
	stale := l
	stale.Worker = "b"
	for name, err := range map[string]error{
		"start":   db.Start(ctx, stale),
		"renew":   db.Renew(ctx, stale, time.Minute),
		"release": db.Release(ctx, sql.Lease{RunID: l.RunID, Worker: "a", Attempt: 2}),
	} {
		if !errors.Is(err, sql.ErrLeaseLost) {
			t.Errorf("%s with a foreign lease: %v, want ErrLeaseLost", name, err)
		}
	}
	if err := db.Start(ctx, l); err != nil {
		t.Fatal(err)
	}
	if err := db.Start(ctx, l); err != nil { // idempotent
		t.Fatal(err)
	}
	before := mustRun(t, db, r.ID)
	if err := db.Renew(ctx, l, time.Hour); err != nil {
		t.Fatal(err)
	}
	after := mustRun(t, db, r.ID)
	if before.Status != chronos.StatusRunning || before.StartedAt == nil || !after.LeasedUntil.After(before.LeasedUntil.Add(50*time.Minute)) {
		t.Fatalf("start/renew: %+v -> %+v", before, after)
	}

	// First attempt fails: pending again after the delay, attempt recorded.
	start := time.Now()
	res, err := db.Complete(ctx, []sql.Outcome{{Lease: l, StatusCode: 503, Error: "HTTP 503", Body: "busy\x00\xff",
		StartedAt: start.Add(-20 * time.Millisecond), FinishedAt: start, RetryDelay: time.Hour}})
	if err != nil || res[0].Err != nil || res[0].Status != chronos.StatusPending {
		t.Fatalf("complete failure: %+v %v", res, err)
	}
	run := mustRun(t, db, r.ID)
	if run.LeasedBy != nil || run.LastError == nil || *run.LastError != "HTTP 503" || *run.LastStatusCode != 503 ||
		time.Until(run.AvailableAt) < 50*time.Minute || run.FinishedAt != nil {
		t.Fatalf("after retryable failure: %+v", run)
	}
	if len(run.Attempts) != 1 || *run.Attempts[0].StatusCode != 503 || *run.Attempts[0].ResponseBody != "busy\uFFFD" ||
		*run.Attempts[0].DurationMS != 20 || run.Attempts[0].FinishedAt == nil || run.Attempts[0].WorkerID != "a" {
		t.Fatalf("attempt row: %+v", run.Attempts)
	}
	// The same late write again is fenced off.
	res, err = db.Complete(ctx, []sql.Outcome{{Lease: l, Success: true, StatusCode: 200}})
	if err != nil || !errors.Is(res[0].Err, sql.ErrLeaseLost) {
		t.Fatalf("second completion of one attempt: %+v %v", res, err)
	}
	if _, err := db.Pool.Exec(ctx, "UPDATE job_runs SET available_at = now() WHERE id = $1", r.ID); err != nil {
		t.Fatal(err)
	}
	// Second (last) attempt fails too: dead.
	c = claimOne(t, db, "b", time.Minute)
	if c.Run.AttemptCount != 2 {
		t.Fatalf("attempt %d", c.Run.AttemptCount)
	}
	res, err = db.Complete(ctx, []sql.Outcome{{Lease: c.Lease(), Error: "dial tcp: refused"}})
	if err != nil || res[0].Err != nil || res[0].Status != chronos.StatusDead {
		t.Fatalf("complete last failure: %+v %v", res, err)
	}
	run = mustRun(t, db, r.ID)
	if run.FinishedAt == nil || run.LastStatusCode != nil || len(run.Attempts) != 2 || run.Attempts[1].StartedAt.IsZero() {
		t.Fatalf("dead run: %+v", run)
	}

	// Redrive: a fresh pending run; not twice while active; not a live run.
	rd, err := db.Redrive(ctx, r.ID)
	if err != nil || rd.Trigger != chronos.TriggerRedrive || *rd.RedriveOf != r.ID || rd.AttemptCount != 0 ||
		!rd.ScheduledAt.Equal(run.ScheduledAt) {
		t.Fatalf("redrive: %+v %v", rd, err)
	}
	_, err = db.Redrive(ctx, r.ID)
	wantCode(t, err, chronos.ECONFLICT)
	_, err = db.Redrive(ctx, rd.ID)
	wantCode(t, err, chronos.ECONFLICT)
	_, err = db.Redrive(ctx, 999999)
	wantCode(t, err, chronos.ENOTFOUND)

	// Release hands back without counting, and forgets the attempt.
	c = claimOne(t, db, "c", time.Minute)
	if err := db.Start(ctx, c.Lease()); err != nil {
		t.Fatal(err)
	}
	if err := db.Release(ctx, c.Lease()); err != nil {
		t.Fatal(err)
	}
	rel := mustRun(t, db, rd.ID)
	if rel.Status != chronos.StatusPending || rel.AttemptCount != 0 || len(rel.Attempts) != 0 || rel.StartedAt != nil {
		t.Fatalf("released: %+v", rel)
	}
	c = claimOne(t, db, "d", time.Minute)
	res, err = db.Complete(ctx, []sql.Outcome{{Lease: c.Lease(), Success: true, StatusCode: 204}})
	if err != nil || res[0].Status != chronos.StatusSucceeded {
		t.Fatalf("success: %+v %v", res, err)
	}
	ok := mustRun(t, db, rd.ID)
	if ok.Status != chronos.StatusSucceeded || ok.AttemptCount != 1 || len(ok.Attempts) != 1 || ok.LastError != nil ||
		*ok.LastStatusCode != 204 || ok.FinishedAt == nil {
		t.Fatalf("succeeded run: %+v", ok)
	}
}

// A batch mixes live and stale leases; each gets its own fate.
func TestCompleteBatch(t *testing.T) {
	db, ctx, j := parallelJob(t, "0 0 1 1 *", func(j *chronos.Job) { j.MaxRetries = 0 })
	insertPending(t, db, j.ID, 5)
	got, err := db.Claim(ctx, "w", 5, time.Minute)
	if err != nil || len(got) != 5 {
		t.Fatal(len(got), err)
	}
	outs := []sql.Outcome{
		{Lease: got[0].Lease(), Success: true, StatusCode: 200},
		{Lease: got[1].Lease(), StatusCode: 500},                                         // no retries left: dead
		{Lease: sql.Lease{RunID: got[2].Run.ID, Worker: "x", Attempt: 1}, Success: true}, // stale
		{Lease: got[3].Lease(), Success: true},
		{Lease: got[3].Lease(), Success: true}, // duplicate
	}
	res, err := db.Complete(ctx, outs)
	if err != nil {
		t.Fatal(err)
	}
	want := []chronos.RunStatus{chronos.StatusSucceeded, chronos.StatusDead, "", chronos.StatusSucceeded, ""}
	for i, r := range res {
		if r.Status != want[i] || (want[i] == "") != errors.Is(r.Err, sql.ErrLeaseLost) {
			t.Errorf("outcome %d: %+v, want %q", i, r, want[i])
		}
	}
	if s := mustRun(t, db, got[2].Run.ID); s.Status != chronos.StatusLeased {
		t.Errorf("stale write changed run: %+v", s)
	}
	if res, err := db.Complete(ctx, nil); err != nil || len(res) != 0 {
		t.Errorf("empty batch: %v %v", res, err)
	}
}

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

// A reaper whose transaction began before a worker's start, and reached
// the run after the start had committed, still reclaims it (running, its
// lease expired): the attempt's end and the run's are not put before the
// start. It was, by the reaper's now(), when it was the end.
func TestReclaimNeverEndsAnAttemptBeforeItsStart(t *testing.T) {
	db, ctx, j := parallelJob(t, "0 0 1 1 *", func(j *chronos.Job) { j.MaxRetries = 0 })
	insertPending(t, db, j.ID, 1)
	claimed, err := db.Claim(ctx, "w", 1, time.Millisecond)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %d runs, %v", len(claimed), err)
	}
	c := claimed[0]
	time.Sleep(5 * time.Millisecond) // the lease expires

	reaper, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reaper.Rollback(context.Background()) //nolint:errcheck // after the test
	var began time.Time
	if err := reaper.QueryRow(ctx, "SELECT now()").Scan(&began); err != nil {
		t.Fatal(err)
	}
	// The start begins after the reaper's transaction (the database's
	// clock moves on) and commits before the reaper looks.
	time.Sleep(20 * time.Millisecond)
	if err := db.Start(ctx, c.Lease()); err != nil {
		t.Fatal(err)
	}
	var reclaimed, dead int
	if err := reaper.QueryRow(ctx, sql.ReclaimSQLForTest, 10, chronos.LeaseExpiredError).Scan(&reclaimed, &dead); err != nil {
		t.Fatal(err)
	}
	if err := reaper.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if dead != 1 {
		t.Fatalf("the reaper took %d runs back and made %d dead, want the run dead", reclaimed, dead)
	}
	var runStart, runEnd, attStart, attEnd time.Time
	if err := db.Pool.QueryRow(ctx, `
		SELECT r.started_at, r.finished_at, a.started_at, a.finished_at
		  FROM job_runs r JOIN run_attempts a ON a.run_id = r.id AND a.attempt = 1
		 WHERE r.id = $1`, c.Run.ID).Scan(&runStart, &runEnd, &attStart, &attEnd); err != nil {
		t.Fatal(err)
	}
	if !attStart.After(began) {
		t.Fatalf("the start (%s) did not begin after the reaper's transaction (%s): the test set nothing up", attStart, began)
	}
	if runEnd.Before(runStart) || attEnd.Before(attStart) {
		t.Fatalf("an end before its start: run %s → %s, attempt %s → %s", runStart, runEnd, attStart, attEnd)
	}
}

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
