package sql_test

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// TestLimitClaimersUnderChurnNeverExceed: 8 claimers, each claim spanning
// several keys (so claims take several key locks, in key order), race
// over 4 keys limited to 3 while runs leave every way there is: success,
// a retry, a release at shutdown, a lease left to expire for the reaper,
// and the leader's release runs beside them. In every snapshot the
// database shows, no key has more than 3 runs leased or running; every
// run succeeds exactly once.
func TestLimitClaimersUnderChurnNeverExceed(t *testing.T) {
	db, ctx := parallelDB(t)
	const (
		keys  = 4
		limit = 3
		runs  = 30 // per job, two jobs a key
	)
	var jobs []int64
	for k := range keys {
		key := fmt.Sprintf("k%d", k)
		putLimit(t, db, key, ptr(limit), nil, nil)
		for range 2 {
			j := cronJob("0 0 1 1 *")
			j.LimitKey, j.MaxRetries = &key, 100 // runs end succeeded, not dead
			jobs = append(jobs, mustCreate(t, db, j).ID)
		}
	}
	// Round-robin over the jobs: a claim of 8 picks runs of every key.
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at)
		SELECT ($1::bigint[])[1 + g % cardinality($1::bigint[])], now(), 'manual', now() - interval '1 second'
		  FROM generate_series(0, $2 - 1) g`, jobs, runs*len(jobs)); err != nil {
		t.Fatal(err)
	}
	total := runs * len(jobs)

	var (
		mu        sync.Mutex
		succeeded = map[int64]bool{}
		done      = make(chan struct{})
		wg        sync.WaitGroup
		bad       atomic.Int64
	)
	finished := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(succeeded) == total
	}
	// The database's view, sampled in one snapshot per round: per key, the
	// runs in flight.
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			rows, err := db.Pool.Query(ctx, `
				SELECT l.key,
				       (SELECT count(*) FROM job_runs r WHERE r.limit_key = l.key AND r.status IN ('leased', 'running'))
				  FROM limits l`)
			if err != nil {
				t.Error(err)
				return
			}
			for rows.Next() {
				var key string
				var n int
				if err := rows.Scan(&key, &n); err != nil {
					t.Error(err)
				}
				if n > limit {
					bad.Add(1)
					t.Errorf("key %s: %d runs leased or running (limit %d)", key, n, limit)
				}
			}
			if rows.Err() != nil {
				t.Error(rows.Err())
				return
			}
		}
	})
	// The leader: releases and reaps.
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if _, err := db.ReleaseLimitedRuns(ctx); err != nil {
				t.Error(err)
				return
			}
			if _, err := db.Reclaim(ctx, 100); err != nil {
				t.Error(err)
				return
			}
		}
	})
	deadline := time.Now().Add(90 * time.Second)
	var claimers sync.WaitGroup
	for w := range 8 {
		worker := fmt.Sprintf("w%d", w)
		claimers.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 24))
			for !finished() && time.Now().Before(deadline) && bad.Load() == 0 {
				got, err := db.Claim(ctx, worker, 8, 200*time.Millisecond)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					time.Sleep(time.Millisecond) // a poll loop's pause, not a synchronisation
					continue
				}
				now := time.Now()
				var outs []sql.Outcome
				for _, c := range got {
					switch rng.IntN(10) {
					case 0: // handed back at shutdown
						if err := db.Release(ctx, c.Lease()); err != nil && !errors.Is(err, sql.ErrLeaseLost) {
							t.Error(err) // lost: the lease expired first, and the reaper took the run
						}
					case 1: // a failure, retried at once
						outs = append(outs, sql.Outcome{Lease: c.Lease(), Error: "boom", StartedAt: now, FinishedAt: now})
					case 2: // the worker dies: the lease expires and the reaper takes it
					default:
						outs = append(outs, sql.Outcome{Lease: c.Lease(), Success: true, StatusCode: 200, StartedAt: now, FinishedAt: now})
					}
				}
				res, err := db.Complete(ctx, outs)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for i, r := range res {
					if r.Err == nil && r.Status == "succeeded" {
						if succeeded[outs[i].RunID] {
							t.Errorf("run %d succeeded twice", outs[i].RunID)
						}
						succeeded[outs[i].RunID] = true
					}
				}
				mu.Unlock()
			}
		})
	}
	claimers.Wait()
	close(done)
	wg.Wait()
	if !finished() {
		mu.Lock()
		n := len(succeeded)
		mu.Unlock()
		t.Fatalf("%d of %d runs succeeded", n, total)
	}
	for k := range keys {
		l, err := db.Limit(ctx, fmt.Sprintf("k%d", k))
		if err != nil {
			t.Fatal(err)
		}
		if l.InFlight != 0 || l.Waiting != 0 {
			t.Errorf("after: %+v, want nothing in flight or waiting", l)
		}
	}
}

// TestLimitUpgradeKeepsRunsInFlight: runs leased under a key before
// migration 028 (whose triggers kept in_flight exact) still count after
// it: with 2 of a limit of 2 in flight the key takes no more until one
// finishes, then exactly one. Also the claim and the completion of this
// version on the schema before 028 (a rolling upgrade's new instance
// before the migration ran) keep the limit.
func TestLimitUpgradeKeepsRunsInFlight(t *testing.T) {
	ctx, dsn := parallelURL(t, sqltest.NewEmptyURL)
	files := migrationFiles(t)
	quiet := sql.MigrateOptions{Log: slog.New(slog.DiscardHandler)}
	if err := sql.MigrateFSForTest(ctx, dsn, upTo(files, 27), quiet); err != nil {
		t.Fatal(err)
	}
	db := sqltest.Open(t, dsn, "upgrade-test")
	putLimit(t, db, "k", ptr(2), nil, nil)
	// The job by hand: this binary's create writes columns of later
	// migrations (job_schedules.materialize_at, 031).
	var j chronos.Job
	if err := db.Pool.QueryRow(ctx, `INSERT INTO jobs (name, cron_expr, target_url, limit_key)
		VALUES ('j', '0 0 1 1 *', 'http://127.0.0.1:9/hook', 'k') RETURNING id`).Scan(&j.ID); err != nil {
		t.Fatal(err)
	}
	insertPending(t, db, j.ID, 6)
	claim := func(step string, want int) []sql.Claimed {
		t.Helper()
		got, err := db.Claim(ctx, "w", 10, time.Minute)
		if err != nil || len(got) != want {
			t.Fatalf("%s: claimed %d, %v; want %d", step, len(got), err, want)
		}
		if f, a, _ := limitState(t, db, "k"); f != a || a > 2 {
			t.Fatalf("%s: %d in flight reported, %d leased or running; limit 2", step, f, a)
		}
		return got
	}
	before := claim("before 028", 2)
	succeed(t, db, before[:1]) // the old trigger takes it off, releases one
	before = append(before[1:], claim("before 028, after a completion", 1)...)

	if err := sql.MigrateFSForTest(ctx, dsn, upTo(files, len(files)), quiet); err != nil {
		t.Fatal(err)
	}
	if l, err := db.Limit(ctx, "k"); err != nil || l.InFlight != 2 {
		t.Fatalf("after 028: %+v, %v; want 2 in flight", l, err)
	}
	if _, err := db.ReleaseLimitedRuns(ctx); err != nil {
		t.Fatal(err)
	}
	claim("after 028, full", 0)
	succeed(t, db, before[:1])
	after := claim("after 028, one finished", 1)
	if f, _, _ := limitState(t, db, "k"); f != 2 {
		t.Fatalf("after 028: %d in flight, want 2", f)
	}
	succeed(t, db, append(before[1:], after...))
	if _, err := db.ReleaseLimitedRuns(ctx); err != nil {
		t.Fatal(err)
	}
	claim("after 028, both finished", 2)
}

// TestLimitClaimWritesNoKeyRow: a claim of runs of a key with only a
// cap, all with room, locks the key's row and writes no version of it
// (migration 034: the runs in flight are counted, not kept); one that
// holds runs writes the held hint, and one of a key with a rate its
// tokens.
func TestLimitClaimWritesNoKeyRow(t *testing.T) {
	db, ctx := parallelDB(t)
	putLimit(t, db, "k", ptr(3), nil, nil)
	putLimit(t, db, "r", nil, ptr(100), ptr(3600)) // refills a token in 36 s: none while the test runs
	j := limitedJob(t, db, "k")
	insertPending(t, db, j.ID, 10)
	version := func(key string) (v string) {
		t.Helper()
		if err := db.Pool.QueryRow(ctx, "SELECT ctid::text || '/' || xmin::text FROM limits WHERE key = $1", key).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := version("k")
	for round := range 3 {
		got, err := db.Claim(ctx, "w", 3, time.Minute)
		if err != nil || len(got) != 3 {
			t.Fatalf("round %d: claimed %d, %v; want 3", round, len(got), err)
		}
		if v := version("k"); v != before {
			t.Fatalf("round %d: the key's row was written (%s, was %s)", round, v, before)
		}
		succeed(t, db, got)
	}
	// Full: the claim of more than the room holds the rest, and says so.
	if got, err := db.Claim(ctx, "w", 10, time.Minute); err != nil || len(got) != 1 {
		t.Fatalf("claim of the last run: %d, %v; want 1", len(got), err)
	}
	insertPending(t, db, j.ID, 5)
	if got, err := db.Claim(ctx, "w", 10, time.Minute); err != nil || len(got) != 2 {
		t.Fatalf("claim with 1 in flight: %d, %v; want 2", len(got), err)
	}
	if f, a, h := limitState(t, db, "k"); f != 3 || a != 3 || h != 3 {
		t.Fatalf("full: in flight %d, active %d, held %d; want 3, 3, 3", f, a, h)
	}
	if v := version("k"); v == before {
		t.Fatal("the claim that held runs did not write the held hint")
	}
	r := limitedJob(t, db, "r")
	insertPending(t, db, r.ID, 4)
	before = version("r")
	if got, err := db.Claim(ctx, "w", 10, time.Minute); err != nil || len(got) != 4 {
		t.Fatalf("claim under the rate: %d, %v; want 4", len(got), err)
	}
	if l, err := db.Limit(ctx, "r"); err != nil || l.TokensLeft == nil || *l.TokensLeft > 97 {
		t.Fatalf("after 4 runs of a bucket of 100: %+v, %v", l, err)
	}
	if v := version("r"); v == before {
		t.Fatal("the claim under a rate did not write the tokens")
	}
}

// TestClaimLimitCheckJoinsNothing: the claim's limit check reads each
// key's count and room by key, and never joins one CTE with another: the
// claim runs with hash and merge joins off (QueryPlannedOnce), so such a
// join is a nested loop that compares every row with every row. As joins,
// a claim of 100 runs over 100 keys compared 20,000 pairs, and a limited
// burst ran at 59-73 % of an unlimited one (bench limits).
func TestClaimLimitCheckJoinsNothing(t *testing.T) {
	db, ctx := parallelDB(t)
	plan, err := sql.ExplainClaimGeneric(ctx, db, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range plan {
		if strings.Contains(line, "Join Filter") {
			t.Fatalf("the claim compares rows pairwise (%s):\n%s", strings.TrimSpace(line), strings.Join(plan, "\n"))
		}
	}
}

// TestLimitCountSeesALeaseCommittedWhileWaiting: a claim that waits for
// a key's lock, held by a claim that leases the key's last free slots,
// counts those leases once the other commits, though they were not
// committed when its statement (and its snapshot) began: it leases
// nothing and holds its runs. Counted in its statement's snapshot it
// would have leased two more than the limit.
func TestLimitCountSeesALeaseCommittedWhileWaiting(t *testing.T) {
	db, ctx := parallelDB(t)
	putLimit(t, db, "k", ptr(2), nil, nil)
	j := limitedJob(t, db, "k")
	insertPending(t, db, j.ID, 4)
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	rows, err := tx.Query(ctx, sql.ClaimSQLForTest, "first", 2, time.Minute.Microseconds(), 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		n++
	}
	if rows.Err() != nil || n != 2 {
		t.Fatalf("first claim: %d, %v; want 2", n, rows.Err())
	}
	type claimed struct {
		got []sql.Claimed
		err error
	}
	second := make(chan claimed, 1)
	go func() {
		got, err := db.Claim(ctx, "second", 10, time.Minute)
		second <- claimed{got, err}
	}()
	// The second claim has begun and waits for the key's row.
	deadline := time.Now().Add(20 * time.Second)
	for {
		var waiting bool
		if err := db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		select {
		case c := <-second:
			t.Fatalf("the second claim did not wait for the first: %d runs, %v", len(c.got), c.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the second claim never waited for the key's lock")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	c := <-second
	if c.err != nil || len(c.got) != 0 {
		t.Fatalf("second claim: %d runs, %v; want none (the first leased the key's 2 slots)", len(c.got), c.err)
	}
	if f, a, h := limitState(t, db, "k"); f != 2 || a != 2 || h != 2 {
		t.Fatalf("after: in flight %d, active %d, held %d; want 2, 2, 2", f, a, h)
	}
}

// TestLimitOlderClaimRefused: on a database migrated to 034, the claim of
// the release before (which adds its leases to the key's in_flight and
// trusts it) fails loudly and leases nothing, rather than letting runs
// past a limit it no longer sees whole; its claims of keyless runs go on.
func TestLimitOlderClaimRefused(t *testing.T) {
	db, ctx := parallelDB(t)
	putLimit(t, db, "k", ptr(2), nil, nil)
	j := limitedJob(t, db, "k")
	insertPending(t, db, j.ID, 2)
	old := func() (int, error) {
		rows, err := db.Pool.Query(ctx, sql.ClaimSQL028ForTest, "old", 10, time.Minute.Microseconds(), 0)
		if err != nil {
			return 0, err
		}
		n := 0
		for rows.Next() {
			n++
		}
		return n, rows.Err()
	}
	if n, err := old(); err == nil || !strings.Contains(err.Error(), "upgrade this instance") {
		t.Fatalf("the older claim: %d runs, %v; want refused, naming the upgrade", n, err)
	}
	if f, a, h := limitState(t, db, "k"); f != 0 || a != 0 || h != 0 {
		t.Fatalf("after the refused claim: in flight %d, active %d, held %d; want nothing", f, a, h)
	}
	free := mustCreate(t, db, cronJob("0 0 1 1 *"))
	if _, err := db.Pool.Exec(ctx, "DELETE FROM job_runs WHERE job_id = $1", j.ID); err != nil {
		t.Fatal(err)
	}
	insertPending(t, db, free.ID, 1)
	if n, err := old(); err != nil || n != 1 {
		t.Fatalf("the older claim of a keyless run: %d, %v; want 1", n, err)
	}
}

// TestDeliveryBeforeLimits: on a database before migration 022 (a new
// binary started before it ran its migrations) a run is claimed and
// completed by the statements without their limit parts.
func TestDeliveryBeforeLimits(t *testing.T) {
	ctx, dsn := parallelURL(t, sqltest.NewEmptyURL)
	files := migrationFiles(t)
	if err := sql.MigrateFSForTest(ctx, dsn, upTo(files, 21), sql.MigrateOptions{Log: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatal(err)
	}
	db := sqltest.Open(t, dsn, "before-limits-test")
	if _, err := db.Pool.Exec(ctx, `
		WITH j AS (INSERT INTO jobs (name, cron_expr, target_url) VALUES ('j', '0 0 1 1 *', 'http://x') RETURNING id)
		INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at) SELECT id, now(), 'manual', now() FROM j`); err != nil {
		t.Fatal(err)
	}
	got, err := db.Claim(ctx, "w", 10, time.Minute)
	if err != nil || len(got) != 1 {
		t.Fatalf("claim before 022: %d, %v; want 1", len(got), err)
	}
	now := time.Now()
	res, err := db.Complete(ctx, []sql.Outcome{{Lease: got[0].Lease(), Success: true, StatusCode: 200, StartedAt: now, FinishedAt: now}})
	if err != nil || res[0].Err != nil || res[0].Status != "succeeded" {
		t.Fatalf("complete before 022: %+v, %v", res, err)
	}
}
