package sql_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
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
	t.Parallel()
	db := sqltest.New(t)
	ctx := t.Context()
	putLimit(t, db, "api.example", ptr(5), nil, nil)
	var limited []int64
	for range 3 {
		j := limitedJob(t, db, "api.example")
		insertPending(t, db, j.ID, 200)
		limited = append(limited, j.ID)
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
	_ = limited
}
