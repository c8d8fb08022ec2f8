package sql_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// putLimit declares a limit or fails the test.
func putLimit(t testing.TB, db *sql.DB, key string, conc, rate, per *int) *chronos.Limit {
	t.Helper()
	l := &chronos.Limit{Key: key, MaxConcurrency: conc, Rate: rate, PerSeconds: per}
	if _, err := db.PutLimit(context.Background(), l); err != nil {
		t.Fatalf("put limit %s: %v", key, err)
	}
	return l
}

// limitedJob creates a job naming key.
func limitedJob(t testing.TB, db *sql.DB, key string) *chronos.Job {
	t.Helper()
	j := cronJob("0 0 1 1 *")
	j.LimitKey = &key
	return mustCreate(t, db, j)
}

// succeed completes claimed runs successfully.
func succeed(t testing.TB, db *sql.DB, cs []sql.Claimed) {
	t.Helper()
	outs := make([]sql.Outcome, len(cs))
	now := time.Now()
	for i, c := range cs {
		outs[i] = sql.Outcome{Lease: c.Lease(), Success: true, StatusCode: 200, StartedAt: now, FinishedAt: now}
	}
	if _, err := db.Complete(context.Background(), outs); err != nil {
		t.Fatal(err)
	}
}

// TestLimitConcurrencyNeverExceeded: 8 claimers racing over 600 due runs
// of three jobs sharing a limit of 5 never hold more than 5 at once, and
// every run is delivered exactly once; runs of an unlimited job beside
// them are claimed at once, whatever waits on the key.
func TestLimitConcurrencyNeverExceeded(t *testing.T) {
	db, ctx := parallelDB(t)
	putLimit(t, db, "api.example", ptr(5), nil, nil)
	for range 3 {
		j := limitedJob(t, db, "api.example")
		insertPending(t, db, j.ID, 200)
	}
	free := mustCreate(t, db, cronJob("0 0 1 1 *"))
	insertPending(t, db, free.ID, 50)

	var (
		inFlight, peak atomic.Int64
		mu             sync.Mutex
		seen           = map[int64]bool{}
		freeSeen       atomic.Int64
		wg             sync.WaitGroup
	)
	deadline := time.Now().Add(60 * time.Second)
	// The database's own count, sampled while the claimers race.
	stop := make(chan struct{})
	var dbPeak atomic.Int64
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			default:
			}
			var n int64
			if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM job_runs
				 WHERE limit_key = 'api.example' AND status IN ('leased', 'running')`).Scan(&n); err != nil {
				t.Error(err)
				return
			}
			if n > dbPeak.Load() {
				dbPeak.Store(n)
			}
		}
	}()
	for w := range 8 {
		worker := fmt.Sprintf("w%d", w)
		wg.Go(func() {
			for time.Now().Before(deadline) {
				mu.Lock()
				done := len(seen) == 600
				mu.Unlock()
				if done {
					return
				}
				got, err := db.Claim(ctx, worker, 4, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				var mine []sql.Claimed
				for _, c := range got {
					if c.Job.ID == free.ID {
						freeSeen.Add(1)
						succeed(t, db, []sql.Claimed{c})
						continue
					}
					mine = append(mine, c)
				}
				n := inFlight.Add(int64(len(mine)))
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				mu.Lock()
				for _, c := range mine {
					if seen[c.Run.ID] {
						t.Errorf("run %d claimed twice", c.Run.ID)
					}
					seen[c.Run.ID] = true
				}
				mu.Unlock()
				// Decrement before the completion commits: the count here
				// may only be higher than the database's, never lower.
				inFlight.Add(-int64(len(mine)))
				succeed(t, db, mine)
				if len(got) == 0 {
					if _, err := db.ReleaseLimitedRuns(ctx); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	<-sampled
	if p := dbPeak.Load(); p > 5 || p == 0 {
		t.Errorf("the database counted up to %d runs leased or running at once, want 1 to 5", p)
	}
	if len(seen) != 600 {
		t.Fatalf("%d limited runs delivered, want 600", len(seen))
	}
	if p := peak.Load(); p > 5 {
		t.Errorf("peak in flight %d, want at most 5", p)
	}
	if n := freeSeen.Load(); n != 50 {
		t.Errorf("%d runs of the unlimited job delivered, want 50", n)
	}
	l, err := db.Limit(ctx, "api.example")
	if err != nil {
		t.Fatal(err)
	}
	if l.InFlight != 0 || l.Waiting != 0 || l.Jobs != 3 {
		t.Errorf("after: %+v, want nothing in flight or waiting, 3 jobs", l)
	}
}

// limitState reads a key's runs in flight as the API reports them, and
// its runs leased or running and held as the runs say. It fails the test
// when the key's held hint is below the runs held for it (migration 028:
// a hint never below what it bounds).
func limitState(t testing.TB, db *sql.DB, key string) (inFlight, active, held int) {
	t.Helper()
	var hint int
	err := db.Pool.QueryRow(context.Background(), `
		SELECT l.held,
		       (SELECT count(*) FROM job_runs WHERE limit_key = $1 AND status IN ('leased', 'running')),
		       (SELECT count(*) FROM job_runs WHERE limit_key = $1 AND limit_held AND held AND status = 'pending')
		  FROM limits l WHERE l.key = $1`,
		key).Scan(&hint, &active, &held)
	if err != nil {
		t.Fatal(err)
	}
	if hint < held {
		t.Fatalf("key %s: held hint %d with %d held", key, hint, held)
	}
	l, err := db.Limit(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return l.InFlight, active, held
}

// TestLimitHoldsRunsOutOfTheWalk: 2,000 due runs of a key limited to 1
// are each walked once and held; the claims then reach an unlimited
// job's runs due after them, and a completion releases exactly one held
// run for the slot it freed.
func TestLimitHoldsRunsOutOfTheWalk(t *testing.T) {
	db, ctx := parallelDB(t)
	putLimit(t, db, "one", ptr(1), nil, nil)
	j := limitedJob(t, db, "one")
	insertPending(t, db, j.ID, 2000)
	free := mustCreate(t, db, cronJob("0 0 1 1 *"))
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at)
		SELECT $1, now(), 'manual', now() - interval '10 milliseconds' FROM generate_series(1, 10)`, free.ID); err != nil {
		t.Fatal(err)
	}
	var (
		limited []sql.Claimed
		freeN   int
		claims  int
	)
	for freeN < 10 {
		claims++
		if claims > 30 {
			t.Fatalf("after %d claims of 100: %d limited, %d free claimed", claims, len(limited), freeN)
		}
		got, err := db.Claim(ctx, "w", 100, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range got {
			if c.Job.ID == free.ID {
				freeN++
			} else {
				limited = append(limited, c)
			}
		}
	}
	if len(limited) != 1 {
		t.Fatalf("%d limited runs claimed, want 1", len(limited))
	}
	if f, a, h := limitState(t, db, "one"); f != 1 || a != 1 || h != 1999 {
		t.Fatalf("in_flight %d, active %d, held %d; want 1, 1, 1999", f, a, h)
	}
	// Nothing claimable is left in the walk.
	if got, err := db.Claim(ctx, "w", 100, time.Minute); err != nil || len(got) != 0 {
		t.Fatalf("claim with the key full: %d runs, %v", len(got), err)
	}
	succeed(t, db, limited)
	if f, a, h := limitState(t, db, "one"); f != 0 || a != 0 || h != 1998 {
		t.Fatalf("after the completion: in_flight %d, active %d, held %d; want 0, 0, 1998", f, a, h)
	}
	got, err := db.Claim(ctx, "w", 100, time.Minute)
	if err != nil || len(got) != 1 {
		t.Fatalf("claim after the release: %d runs, %v; want 1", len(got), err)
	}
}

// TestLimitRateHolds: a rate of 20 per second (the bucket starts full) lets
// at most 20 + 20/s runs start, and the leader's release lets the held
// ones go as tokens refill.
func TestLimitRateHolds(t *testing.T) {
	db, ctx := parallelDB(t)
	putLimit(t, db, "rate", nil, ptr(20), ptr(1))
	j := limitedJob(t, db, "rate")
	insertPending(t, db, j.ID, 500)
	start := time.Now()
	var claimed int
	for time.Since(start) < 2*time.Second {
		got, err := db.Claim(ctx, "w", 50, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		claimed += len(got)
		succeed(t, db, got)
		if _, err := db.ReleaseLimitedRuns(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond) // pacing a poll loop, not synchronising
	}
	elapsed := time.Since(start).Seconds()
	if max := 20 + int(20*elapsed) + 1; claimed > max {
		t.Errorf("%d runs started in %.2fs, want at most %d", claimed, elapsed, max)
	}
	if claimed < 40 {
		t.Errorf("%d runs started in %.2fs, want at least 40 (the bucket, then 20/s)", claimed, elapsed)
	}
	l, err := db.Limit(ctx, "rate")
	if err != nil {
		t.Fatal(err)
	}
	if l.TokensLeft == nil || *l.TokensLeft > 20 || l.InFlight != 0 || l.Waiting != 500-claimed {
		t.Errorf("after: %+v (claimed %d)", l, claimed)
	}
}

// TestLimitCountsEveryExit: a retry, a release at shutdown, a reclaimed
// lease and a deleted job each give their slot back (a completion
// releases a held run at once, the leader's release after the other
// exits); raising the limit releases held runs at once; deleting a limit
// releases what it held; the leader's recount repairs a broken held hint.
func TestLimitCountsEveryExit(t *testing.T) {
	db, ctx := parallelDB(t)
	putLimit(t, db, "k", ptr(2), nil, nil)
	j := limitedJob(t, db, "k")
	insertPending(t, db, j.ID, 10)
	want := func(step string, inFlight, held int) {
		t.Helper()
		f, a, h := limitState(t, db, "k")
		if f != inFlight || a != inFlight || h != held {
			t.Fatalf("%s: in_flight %d, active %d, held %d; want %d, %d, %d", step, f, a, h, inFlight, inFlight, held)
		}
	}
	got, err := db.Claim(ctx, "w", 10, time.Minute)
	if err != nil || len(got) != 2 {
		t.Fatalf("claim: %d, %v", len(got), err)
	}
	want("claimed", 2, 8)
	// A failure with attempts left goes back to pending: its slot frees.
	now := time.Now()
	if _, err := db.Complete(ctx, []sql.Outcome{{Lease: got[0].Lease(), Error: "boom", StartedAt: now, FinishedAt: now,
		RetryDelay: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	want("retried", 1, 7)
	// Released at shutdown.
	if err := db.Release(ctx, got[1].Lease()); err != nil {
		t.Fatal(err)
	}
	// The claim counts the slot free at once;
	// the held runs behind it go at the leader's next release: as many as
	// the key has room for, 2.
	want("released", 0, 7)
	if n, err := db.ReleaseLimitedRuns(ctx); err != nil || n != 2 {
		t.Fatalf("leader's release after the shutdown release: %d, %v; want 2", n, err)
	}
	want("released by the leader", 0, 5)
	got, err = db.Claim(ctx, "w", 10, time.Millisecond)
	if err != nil || len(got) != 2 {
		t.Fatalf("second claim: %d, %v", len(got), err)
	}
	// Reclaimed by the reaper once the 1 ms lease has expired.
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := db.Reclaim(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		if res.Reclaimed+res.Dead >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the expired leases were not reclaimed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	f, _, _ := limitState(t, db, "k")
	if f != 0 {
		t.Fatalf("after the reclaim: in_flight %d, want 0", f)
	}
	// The leader releases the held runs the reclaim made room for.
	if n, err := db.ReleaseLimitedRuns(ctx); err != nil || n != 2 {
		t.Fatalf("leader's release after the reclaim: %d, %v; want 2", n, err)
	}
	// Raising the limit releases held runs now.
	putLimit(t, db, "k", ptr(5), nil, nil)
	if _, _, h := limitState(t, db, "k"); h > 1 {
		t.Fatalf("after raising to 5: %d still held", h)
	}
	got, err = db.Claim(ctx, "w", 10, time.Minute)
	if err != nil || len(got) != 5 {
		t.Fatalf("claim under 5: %d, %v", len(got), err)
	}
	// A PATCH to another key moves the pending runs and lets them go.
	putLimit(t, db, "other", ptr(100), nil, nil)
	if _, err := db.UpdateJob(ctx, j.ID, &chronos.JobUpdate{LimitKey: chronos.Some("other")}); err != nil {
		t.Fatal(err)
	}
	if _, _, h := limitState(t, db, "k"); h != 0 {
		t.Fatalf("after the PATCH: %d runs still held for k", h)
	}
	// Deleting the job deletes its runs in flight: the slots come back.
	if err := db.DeleteJob(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	want("job deleted", 0, 0)
	if err := db.DeleteLimit(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if fixed, err := db.RecountLimits(ctx); err != nil || len(fixed) != 0 {
		t.Fatalf("recount: %v, %v; want nothing to fix", fixed, err)
	}
	// A held hint above the runs held is the normal state: set right
	// quietly.
	if _, err := db.Pool.Exec(ctx, "UPDATE limits SET held = 3 WHERE key = 'other'"); err != nil {
		t.Fatal(err)
	}
	if fixed, err := db.RecountLimits(ctx); err != nil || len(fixed) != 0 {
		t.Fatalf("recount: %v, %v; want nothing reported", fixed, err)
	}
	var hint int
	if err := db.Pool.QueryRow(ctx, "SELECT held FROM limits WHERE key = 'other'").Scan(&hint); err != nil || hint != 0 {
		t.Fatalf("after the recount: held %d, %v; want 0", hint, err)
	}
	// A hint below the runs held, written behind the claim's back (it
	// would leave them to the minute's recount), is repaired and reported.
	putLimit(t, db, "other", ptr(1), nil, nil)
	o := limitedJob(t, db, "other")
	insertPending(t, db, o.ID, 2)
	if got, err := db.Claim(ctx, "w", 10, time.Minute); err != nil || len(got) != 1 {
		t.Fatalf("claim of other: %d, %v", len(got), err)
	}
	if _, err := db.Pool.Exec(ctx, "UPDATE limits SET held = 0 WHERE key = 'other'"); err != nil {
		t.Fatal(err)
	}
	if fixed, err := db.RecountLimits(ctx); err != nil || len(fixed) != 1 || fixed[0] != "other" {
		t.Fatalf("recount: %v, %v; want other fixed", fixed, err)
	}
	if _, _, h := limitState(t, db, "other"); h != 1 {
		t.Fatalf("after the recount: %d held, want 1", h)
	}
}

// TestClaimBeforeLimits: the claim without the limit check, and the
// completion without its release of held runs, are the statements with
// none of their parts left.
func TestClaimBeforeLimits(t *testing.T) {
	t.Parallel()
	for _, part := range []string{"limit_key", "over_limit", "limit_rows", "limit_taken", "limits"} {
		if strings.Contains(sql.ClaimSQLBeforeLimitsForTest, part) {
			t.Errorf("the claim before limits still has %q:\n%s", part, sql.ClaimSQLBeforeLimitsForTest)
		}
	}
	if !strings.Contains(sql.ClaimSQLBeforeLimitsForTest, "), locked AS (") || !strings.Contains(sql.ClaimSQLBeforeLimitsForTest, "), leased AS (") {
		t.Errorf("the claim before limits lost its CTEs:\n%s", sql.ClaimSQLBeforeLimitsForTest)
	}
	for _, part := range []string{"limit_key", "limits", "released"} {
		if strings.Contains(sql.CompleteSQLBeforeLimitsForTest, part) {
			t.Errorf("the completion before limits still has %q:\n%s", part, sql.CompleteSQLBeforeLimitsForTest)
		}
	}
	if !strings.Contains(sql.CompleteSQLBeforeLimitsForTest, "), recorded AS (") {
		t.Errorf("the completion before limits lost its CTEs:\n%s", sql.CompleteSQLBeforeLimitsForTest)
	}
}

// A key declared again while runs leased under it are still in flight
// (its jobs moved off it, the limit deleted and put back) counts them at
// once: it started at 0 and let more in until the leader's recount.
func TestLimitRecreatedCountsRunsInFlight(t *testing.T) {
	db, ctx := parallelDB(t)
	putLimit(t, db, "k", ptr(2), nil, nil)
	j := limitedJob(t, db, "k")
	insertPending(t, db, j.ID, 2)
	if got, err := db.Claim(ctx, "w", 10, time.Minute); err != nil || len(got) != 2 {
		t.Fatalf("claim: %d, %v", len(got), err)
	}
	if _, err := db.UpdateJob(ctx, j.ID, &chronos.JobUpdate{LimitKey: chronos.Opt[string]{Set: true, Null: true}}); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteLimit(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	l := putLimit(t, db, "k", ptr(2), nil, nil)
	if l.InFlight != 2 {
		t.Fatalf("the key put back counts %d runs in flight, want the 2 leased under it", l.InFlight)
	}
}
