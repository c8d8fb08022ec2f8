package reactor

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// Backfilled runs are delivered oldest first, flagged with
// X-Chronos-Backfill, one at a time under a skip job's overlap policy.
func TestBackfillDeliveredOldestFirstWithHeader(t *testing.T) {
	t.Parallel()
	type delivery struct {
		sched    time.Time
		backfill bool
	}
	var (
		mu  sync.Mutex
		got []delivery
	)
	tg := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		at, _ := time.Parse(time.RFC3339Nano, r.Header.Get(HeaderScheduledAt))
		mu.Lock()
		got = append(got, delivery{sched: at.UTC(), backfill: r.Header.Get(HeaderBackfill) == "true"})
		mu.Unlock()
		select { // a target that takes a moment: runs would overlap if allowed
		case <-time.After(20 * time.Millisecond):
		case <-r.Context().Done():
		}
	})
	dsn := sqltest.NewURL(t)
	in := startReactor(t, dsn, Config{})
	expr := "0 * * * *"
	j := createJob(t, in.db, &chronos.Job{CronExpr: &expr, TargetURL: tg.URL, Overlap: chronos.OverlapSkip})
	now := dbNow(t, in.db).Truncate(time.Hour)
	b, err := in.db.Backfill(t.Context(), j.ID, chronos.BackfillRequest{From: now.Add(-6 * time.Hour), To: now})
	if err != nil || len(b.Created) != 6 {
		t.Fatalf("backfill: %d runs, %v", len(b.Created), err)
	}
	eventually(t, 30*time.Second, "six backfilled deliveries", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 6
	})
	mu.Lock()
	defer mu.Unlock()
	for i, d := range got[:6] {
		if want := now.Add(time.Duration(i-6) * time.Hour); !d.sched.Equal(want) || !d.backfill {
			t.Fatalf("delivery %d: scheduled %s backfill %v, want %s backfill true (all: %+v)", i, d.sched, d.backfill, want, got)
		}
	}
	if m := tg.maxSeen.Load(); m > 1 {
		t.Fatalf("%d backfilled runs in flight at once under overlap skip", m)
	}
}
