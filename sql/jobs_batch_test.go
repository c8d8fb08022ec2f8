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

// TestCreatesCoalesce: creates that arrive while the writers are busy are
// written together, in one batch, and a taken name (by a stored job or by
// another create of the same batch) fails that create only.
func TestCreatesCoalesce(t *testing.T) {
	db, ctx, taken := parallelJob(t, "*/5 * * * *")
	before, _ := sql.CreateStats(db)

	release := holdWriters(t, db)
	type result struct {
		j   *chronos.Job
		err error
	}
	results := make(chan result, 16)
	create := func(j *chronos.Job) { results <- result{j, db.CreateJob(ctx, j)} }
	var wg sync.WaitGroup
	// The writer, with a batch of one; the rest queue behind it (fewer
	// than sql.CreateSecondAt: no second writer).
	wg.Go(func() { create(cronJob("*/5 * * * *")) })
	waitFor(t, func() bool { return activeInserts(t, db) == 1 })
	dup := cronJob("")
	dup.RunAt = ptr(time.Now().Add(time.Hour))
	queued := []*chronos.Job{dup}
	for range 7 {
		queued = append(queued, cronJob("*/5 * * * *"))
	}
	again := *dup // the same name twice in one batch
	again.CronExpr, again.RunAt = ptr("0 * * * *"), nil
	queued = append(queued, &again)
	clash := cronJob("*/5 * * * *")
	clash.Name = taken.Name // a stored job's name
	queued = append(queued, clash)
	for _, j := range queued {
		wg.Go(func() { create(j) })
	}
	waitFor(t, func() bool { _, q := sql.CreateStats(db); return q == len(queued) })
	release()
	wg.Wait()
	close(results)

	ok, pairConflicts := 0, 0
	for r := range results {
		switch {
		case r.j == clash:
			if chronos.ErrorCode(r.err) != chronos.ECONFLICT {
				t.Errorf("job %q: %v, want a conflict", r.j.Name, r.err)
			}
		case (r.j == &again || r.j == dup) && r.err != nil:
			// The queue's order is the order the goroutines reached it:
			// whichever of the two same-named creates came second loses.
			pairConflicts++
			if chronos.ErrorCode(r.err) != chronos.ECONFLICT {
				t.Errorf("job %q: %v, want a conflict", r.j.Name, r.err)
			}
		case r.err != nil:
			t.Errorf("job %q: %v", r.j.Name, r.err)
		default:
			ok++
			got, err := db.Job(ctx, r.j.ID)
			if err != nil || got.Name != r.j.Name || r.j.CreatedAt.IsZero() || r.j.NextRunAt == nil {
				t.Errorf("job %q as stored: %+v %v; as returned: %+v", r.j.Name, got, err, r.j)
			}
		}
	}
	if pairConflicts != 1 {
		t.Errorf("%d of the two creates named %q failed, want exactly 1", pairConflicts, dup.Name)
	}
	if ok != 1+len(queued)-2 {
		t.Errorf("%d creates succeeded, want %d", ok, len(queued)-1)
	}
	after, _ := sql.CreateStats(db)
	if after-before != 2 {
		t.Errorf("%d batches for 1 + %d creates, want 2 (1 alone, then the queue in one)", after-before, len(queued))
	}
	if n := activeInserts(t, db); n != 0 {
		t.Errorf("%d inserts still running", n)
	}
	var audits int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM job_audit WHERE action = 'create'").Scan(&audits); err != nil {
		t.Fatal(err)
	}
	if audits != ok+1 {
		t.Errorf("%d create audit entries for %d jobs", audits, ok+1)
	}
}

// TestCreatesSecondWriter: while one batch is written, the creates queue
// behind it; once sql.CreateSecondAt wait, a second writer writes them
// beside the first, and the rest queue again.
func TestCreatesSecondWriter(t *testing.T) {
	db, ctx, _ := parallelJob(t, "*/5 * * * *")
	before, _ := sql.CreateStats(db)
	release := holdWriters(t, db)
	errs := make(chan error, 2*sql.CreateSecondAt)
	var wg sync.WaitGroup
	create := func() { wg.Go(func() { errs <- db.CreateJob(ctx, cronJob("*/5 * * * *")) }) }
	create()
	waitFor(t, func() bool { return activeInserts(t, db) == 1 })
	for range sql.CreateSecondAt - 1 {
		create()
	}
	waitFor(t, func() bool { _, q := sql.CreateStats(db); return q == sql.CreateSecondAt-1 })
	if n := activeInserts(t, db); n != 1 {
		t.Fatalf("%d inserts with %d creates queued, want 1", n, sql.CreateSecondAt-1)
	}
	create() // enough queued: its own writer takes them
	waitFor(t, func() bool { return activeInserts(t, db) == 2 })
	create() // and queues again behind the two
	waitFor(t, func() bool { _, q := sql.CreateStats(db); return q == 1 })
	release()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if after, _ := sql.CreateStats(db); after-before != 3 {
		t.Errorf("%d batches, want 3 (1 alone, the queue beside it, the last one)", after-before)
	}
}

// holdWriters holds the creates' writers until release: job_audit, which
// every create writes, is locked by a transaction of its own, rolled back
// by release (or at the end of the test).
func holdWriters(t *testing.T, db *sql.DB) (release func()) {
	t.Helper()
	lock, err := db.Pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Rollback(context.Background()) }) //nolint:errcheck
	if _, err := lock.Exec(t.Context(), "LOCK TABLE job_audit IN EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if err := lock.Rollback(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// activeInserts counts this database's sessions running an INSERT INTO jobs.
func activeInserts(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	err := db.Pool.QueryRow(context.Background(), `
		SELECT count(*) FROM pg_stat_activity
		 WHERE datname = current_database() AND state = 'active' AND query LIKE 'WITH v AS (%INSERT INTO jobs%'`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCreateJobsAllOrNothing: a batch with an invalid job, or a name
// taken, creates nothing and names each failing job by its index.
func TestCreateJobsAllOrNothing(t *testing.T) {
	db, ctx, stored := parallelJob(t, "*/5 * * * *")

	batch := []*chronos.Job{cronJob("*/5 * * * *"), cronJob("*/5 * * * *"), cronJob("*/5 * * * *")}
	batch[1].CronExpr = ptr("not a cron")
	err := db.CreateJobs(ctx, batch)
	var e *chronos.Error
	if !errors.As(err, &e) || e.Code != chronos.EINVALID || e.Fields["jobs[1].cron_expr"] == "" || len(e.Fields) != 1 {
		t.Fatalf("invalid job: %v", err)
	}

	batch = []*chronos.Job{cronJob("*/5 * * * *"), cronJob("*/5 * * * *"), cronJob("*/5 * * * *"), cronJob("*/5 * * * *")}
	batch[1].Name = stored.Name
	batch[3].Name = batch[0].Name
	err = db.CreateJobs(ctx, batch)
	if !errors.As(err, &e) || e.Code != chronos.ECONFLICT || e.Fields["jobs[1].name"] == "" || e.Fields["jobs[3].name"] == "" || len(e.Fields) != 2 {
		t.Fatalf("taken names: %v", err)
	}
	var n int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM jobs").Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d jobs after refused batches (%v), want the 1 stored before", n, err)
	}

	batch = make([]*chronos.Job, 200)
	for i := range batch {
		batch[i] = cronJob("*/5 * * * *")
	}
	if err := db.CreateJobs(ctx, batch); err != nil {
		t.Fatal(err)
	}
	for i, j := range batch {
		got, err := db.Job(ctx, j.ID)
		if err != nil || got.Name != j.Name || (i > 0 && j.ID <= batch[i-1].ID-1000) {
			t.Fatalf("job %d: %+v %v", i, got, err)
		}
	}
	if err := db.CreateJobs(ctx, make([]*chronos.Job, sql.MaxJobBatch+1)); chronos.ErrorCode(err) != chronos.EINVALID {
		t.Fatalf("oversized batch: %v", err)
	}
}

// TestIdempotencyKeyInWriteTransaction: the key and its answer are
// stored in the transaction of the write they guard. A write whose
// transaction fails after the key was taken leaves neither run nor key;
// a write that committed has its answer stored with it, so a retry long
// after a crash (past the old 5-minute "abandoned" window) replays it and
// never runs again.
func TestIdempotencyKeyInWriteTransaction(t *testing.T) {
	db, ctx, j := parallelJob(t, "*/5 * * * *")
	runs := func() int {
		var n int
		if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM job_runs WHERE job_id = $1", j.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	guard := func(fail bool) *sql.Idempotency {
		return &sql.Idempotency{KeyName: "alice", Key: "k1", Fingerprint: []byte("fp"),
			Answer: func(v ...any) (sql.IdempotentResponse, error) {
				if fail {
					return sql.IdempotentResponse{}, errors.New("crash after the record")
				}
				r := v[0].(*chronos.Run)
				return sql.IdempotentResponse{Status: 202, ContentType: "application/json", Body: fmt.Appendf(nil, `{"id":%d}`, r.ID)}, nil
			}}
	}

	// The write's transaction fails after the key and the run were written.
	if _, err := db.Trigger(sql.WithIdempotency(ctx, guard(true)), j.ID); err == nil {
		t.Fatal("trigger succeeded although its answer failed")
	}
	if prev, err := db.IdempotencyKey(ctx, "alice", "k1"); err != nil || prev != nil || runs() != 0 {
		t.Fatalf("after a failed write: key %+v (%v), %d runs; want neither", prev, err, runs())
	}

	// The retry runs, and its answer is stored by the write's own commit:
	// nothing after it (the part a crash would skip) is needed.
	g := guard(false)
	r, err := db.Trigger(sql.WithIdempotency(ctx, g), j.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`{"id":%d}`, r.ID)
	if g.Stored() == nil || string(g.Stored().Body) != want {
		t.Fatalf("stored answer %+v", g.Stored())
	}
	if _, err := db.Pool.Exec(ctx, "UPDATE idempotency_keys SET created_at = now() - interval '6 minutes'"); err != nil {
		t.Fatal(err)
	}
	prev, err := db.IdempotencyKey(ctx, "alice", "k1")
	if err != nil || prev == nil || prev.Status != 202 || string(prev.Body) != want {
		t.Fatalf("key after the write: %+v %v", prev, err)
	}
	// A retry that reaches the write anyway (it raced the lookup) is
	// refused with the stored answer, and writes nothing.
	_, err = db.Trigger(sql.WithIdempotency(ctx, guard(false)), j.ID)
	var taken *sql.IdempotencyTakenError
	if !errors.As(err, &taken) || string(taken.Previous.Body) != want {
		t.Fatalf("retry: %v", err)
	}
	if n := runs(); n != 1 {
		t.Fatalf("%d runs after a retry, want 1", n)
	}

	// Batched creates store the key with the batch.
	gb := &sql.Idempotency{KeyName: "alice", Key: "batch", Fingerprint: []byte("fp"),
		Answer: func(v ...any) (sql.IdempotentResponse, error) {
			return sql.IdempotentResponse{Status: 201, Body: fmt.Appendf(nil, "%d", len(v[0].([]*chronos.Job)))}, nil
		}}
	if err := db.CreateJobs(sql.WithIdempotency(ctx, gb), []*chronos.Job{cronJob("@daily"), cronJob("@daily")}); err != nil {
		t.Fatal(err)
	}
	if prev, err := db.IdempotencyKey(ctx, "alice", "batch"); err != nil || prev == nil || string(prev.Body) != "2" {
		t.Fatalf("batch key: %+v %v", prev, err)
	}
}
