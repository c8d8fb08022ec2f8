package sql_test

import (
	"context"
	"testing"
	"time"

	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

func TestQueueStats(t *testing.T) {
	db := sqltest.New(t)
	ctx := context.Background()

	if _, ok, err := db.QueueStats(ctx); err != nil || ok {
		t.Fatalf("before any refresh: ok=%v err=%v, want no stats", ok, err)
	}
	empty, err := db.RefreshQueueStats(ctx, "leader-1")
	if err != nil {
		t.Fatal(err)
	}
	if empty.Pending != 0 || empty.Due != 0 || empty.Leased != 0 || empty.Running != 0 || empty.OldestDue != 0 {
		t.Fatalf("empty queue: %+v", empty)
	}

	job := mustCreate(t, db, cronJob("0 3 * * *"))
	insertPending(t, db, job.ID, 5) // due a second ago
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at)
		VALUES ($1, now(), 'manual', now() + interval '1 hour'),
		       ($1, now(), 'manual', now() - interval '90 seconds'),
		       ($1, now(), 'manual', now() - interval '1 hour')`, job.ID); err != nil {
		t.Fatal(err)
	}
	// The oldest due run goes to a worker: it no longer counts as waiting.
	leased := claimOne(t, db, "w1", time.Minute)
	started := claimOne(t, db, "w1", time.Minute)
	if err := db.Start(ctx, started.Lease()); err != nil {
		t.Fatal(err)
	}
	_ = leased

	got, err := db.RefreshQueueStats(ctx, "leader-2")
	if err != nil {
		t.Fatal(err)
	}
	// 8 runs: 2 claimed (the two oldest), 1 in the future, 5 due a second ago.
	if got.Pending != 6 || got.Due != 5 || got.Leased != 1 || got.Running != 1 {
		t.Fatalf("stats %+v: want pending 6, due 5, leased 1, running 1", got)
	}
	if got.OldestDue < time.Second || got.OldestDue > time.Minute {
		t.Fatalf("oldest due %s: want about a second (the runs due 90 s and 1 h ago were claimed)", got.OldestDue)
	}
	if got.ComputedBy != "leader-2" || got.Age < 0 || got.Age > time.Minute {
		t.Fatalf("computed by %q, age %s", got.ComputedBy, got.Age)
	}

	read, ok, err := db.QueueStats(ctx)
	if err != nil || !ok {
		t.Fatalf("read: ok=%v err=%v", ok, err)
	}
	if read.Pending != got.Pending || read.Due != got.Due || read.OldestDue != got.OldestDue || !read.ComputedAt.Equal(got.ComputedAt) {
		t.Fatalf("read %+v, want what was stored: %+v", read, got)
	}
	var rows int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM queue_stats").Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("queue_stats has %d rows (err %v), want 1", rows, err)
	}
}

// TestQueueStatsUseIndexes guards the "cheap" in "computed cheaply": the
// counts go through the partial indexes of the active statuses, never a
// scan of the whole history.
func TestQueueStatsUseIndexes(t *testing.T) {
	db := sqltest.New(t)
	ctx := context.Background()
	// History: many finished runs, which the counts must not visit. They
	// go to range partitions, as the leader's upkeep has them in a live
	// cluster: scheduled in the past, they would land in the legacy or the
	// default partition, depending on when the cached template database
	// was migrated.
	job := jobWithPartitions(t, db)
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO job_runs (job_id, scheduled_at, trigger, status, finished_at)
		SELECT $1, now() + make_interval(secs => g / 2.0), 'manual', 'succeeded', now() FROM generate_series(1, 20000) g`, job.ID); err != nil {
		t.Fatal(err)
	}
	insertPending(t, db, job.ID, 10)
	if _, err := db.Pool.Exec(ctx, "ANALYZE job_runs"); err != nil {
		t.Fatal(err)
	}
	plan := explain(t, db.Pool.Query, sql.RefreshQueueStatsSQLForTest, "leader")
	if len(bigSeqScans(t, db, plan)) > 0 {
		t.Fatalf("the queue stats scan job_runs sequentially:\n%s", plan)
	}
}
