package reactor

import (
	"context"
	"testing"
	"time"

	"github.com/chronoshq/chronos/reactor/reactortest"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// The leader keeps the queue stats fresh; a follower never writes them.
func TestQueueStatsWrittenByLeader(t *testing.T) {
	dsn := sqltest.NewURL(t)
	in := startReactor(t, dsn, Config{Instance: "stats-leader", QueueStatsInterval: 50 * time.Millisecond})
	eventually(t, 10*time.Second, "the leader to store queue stats", func() bool {
		s, ok, err := in.db.QueueStats(context.Background())
		return err == nil && ok && s.ComputedBy == "stats-leader"
	})
	first, _, _ := in.db.QueueStats(context.Background())
	eventually(t, 10*time.Second, "the stats to be recomputed", func() bool {
		s, _, err := in.db.QueueStats(context.Background())
		return err == nil && s.ComputedAt.After(first.ComputedAt)
	})
}

// The loop returns promptly when its context ends, mid-refresh or idle.
func TestQueueStatsLoopStops(t *testing.T) {
	dsn := sqltest.NewURL(t)
	db := reactortest.OpenDB(t, dsn, "stats-loop")
	r := New(Config{DSN: dsn, Instance: "stats-loop", QueueStatsInterval: time.Hour}, db, nil, reactortest.Logger(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		newQueueStats(r).run(ctx)
	}()
	eventually(t, 10*time.Second, "the first refresh", func() bool {
		_, ok, err := db.QueueStats(context.Background())
		return err == nil && ok
	})
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("queue stats loop did not stop after its context ended")
	}
}

// In flight counts the slots taken out of WORKER_CONCURRENCY.
func TestInFlight(t *testing.T) {
	dsn := sqltest.NewURL(t)
	db := reactortest.OpenDB(t, dsn, "inflight")
	r := New(Config{DSN: dsn, Instance: "inflight", WorkerConcurrency: 4}, db, nil, reactortest.Logger(t))
	if r.InFlight() != 0 || r.WorkerSlots() != 4 {
		t.Fatalf("idle: in flight %d of %d, want 0 of 4", r.InFlight(), r.WorkerSlots())
	}
	<-r.disp.slots
	<-r.disp.slots
	if r.InFlight() != 2 {
		t.Fatalf("two slots taken: in flight %d, want 2", r.InFlight())
	}
}
