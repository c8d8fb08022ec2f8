package sql_test

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
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
// database shows, no key has more than 3 runs leased or running, and no
// key's in_flight is below them (the bound the claim relies on); every
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
	// runs in flight and the row's bound.
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			rows, err := db.Pool.Query(ctx, `
				SELECT l.key, l.in_flight,
				       (SELECT count(*) FROM job_runs r WHERE r.limit_key = l.key AND r.status IN ('leased', 'running'))
				  FROM limits l`)
			if err != nil {
				t.Error(err)
				return
			}
			for rows.Next() {
				var key string
				var bound, n int
				if err := rows.Scan(&key, &bound, &n); err != nil {
					t.Error(err)
				}
				if n > limit || bound < n {
					bad.Add(1)
					t.Errorf("key %s: %d runs leased or running, in_flight %d (limit %d)", key, n, bound, limit)
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

// TestLimitClaimCountsOnlyWhenNearFull: a key whose bound leaves room
// is not counted (the claim reads its row and writes it, nothing more);
// one whose bound says full, with its runs finished, is counted and
// takes runs at once, without waiting for the leader.
func TestLimitClaimCountsOnlyWhenNearFull(t *testing.T) {
	db, ctx := parallelDB(t)
	putLimit(t, db, "k", ptr(3), nil, nil)
	j := limitedJob(t, db, "k")
	insertPending(t, db, j.ID, 9)
	for round := range 3 {
		got, err := db.Claim(ctx, "w", 3, time.Minute)
		if err != nil || len(got) != 3 {
			t.Fatalf("round %d: claimed %d, %v; want 3", round, len(got), err)
		}
		var bound int
		if err := db.Pool.QueryRow(ctx, "SELECT in_flight FROM limits WHERE key = 'k'").Scan(&bound); err != nil || bound != 3 {
			t.Fatalf("round %d: in_flight %d, %v; want 3 (the count, 0, plus the 3 leased)", round, bound, err)
		}
		succeed(t, db, got)
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
