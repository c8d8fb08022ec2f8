package sql_test

import (
	"errors"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chronoshq/chronos/sql"
)

// insertRunAt inserts a run of job scheduled offset after the start of the
// current minute, with status, and returns its id and the partition it
// landed in.
func insertRunAt(t *testing.T, db *sql.DB, jobID int64, offset string, status string) (int64, string) {
	t.Helper()
	var id int64
	var part string
	err := db.Pool.QueryRow(t.Context(), `
		INSERT INTO job_runs (job_id, scheduled_at, trigger, status, finished_at)
		VALUES ($1, date_trunc('minute', now()) + $2::interval, 'manual', $3,
		        CASE WHEN $3 IN ('succeeded', 'dead', 'missed') THEN now() END)
		RETURNING id, tableoid::regclass::text`, jobID, offset, status).Scan(&id, &part)
	if err != nil {
		t.Fatalf("insert run at minute+%s: %v", offset, err)
	}
	return id, part
}

func partitionOf(t *testing.T, db *sql.DB, table, key string, id int64) string {
	t.Helper()
	var part string
	if err := db.Pool.QueryRow(t.Context(), "SELECT tableoid::regclass::text FROM "+table+" WHERE "+key+" = $1", id).Scan(&part); err != nil {
		t.Fatalf("partition of %s %d: %v", table, id, err)
	}
	return part
}

// Partitions are created ahead, so a run due within them never lands in
// the default partition; runs outside every range (a one-shot years away,
// a run scheduled long ago) land in the default partition, so no insert
// ever fails; a run that waited there stays, and its range's partitions
// end before it and start after it.
func TestRunPartitionsCreatedAhead(t *testing.T) {
	db, ctx, j := parallelJob(t, "0 0 1 1 *")

	early, part := insertRunAt(t, db, j.ID, "90 minutes", "pending")
	if part != "job_runs_default" {
		t.Fatalf("a run with no partition for it yet went to %s", part)
	}
	created, err := db.EnsureRunPartitions(ctx, time.Hour, 3*time.Hour)
	if err != nil || len(created) < 4 {
		t.Fatalf("created %v (%v), want the runs partitions 3 h ahead and an attempts one", created, err)
	}
	// The run that waited stays (a move would break a worker's fence);
	// its range is covered before it and after it, whatever the time of
	// day puts in the same range as it.
	if p := partitionOf(t, db, "job_runs", "id", early); p != "job_runs_default" {
		t.Fatalf("the waiting run moved to %s", p)
	}
	for _, off := range []string{"85 minutes", "95 minutes"} {
		if _, part := insertRunAt(t, db, j.ID, off, "pending"); !slices.Contains(created, part) {
			t.Fatalf("a run at minute+%s, next to the waiting one, went to %s (created %v)", off, part, created)
		}
	}
	for _, off := range []string{"0 seconds", "1 hour", "2 hours 59 minutes"} {
		if _, part := insertRunAt(t, db, j.ID, off, "pending"); part == "job_runs_default" {
			t.Fatalf("a run at now()+%s went to %s: no partition ahead", off, part)
		}
	}
	if _, part := insertRunAt(t, db, j.ID, "5 years", "pending"); part != "job_runs_default" {
		t.Fatalf("a run 5 years ahead went to %s, want the default partition", part)
	}
	// Before every range: the legacy partition (FROM MINVALUE) while it
	// lasts, then the default one.
	if _, part := insertRunAt(t, db, j.ID, "-5 years", "pending"); part != "job_runs_legacy" && part != "job_runs_default" {
		t.Fatalf("a run 5 years back went to %s", part)
	}
	// An attempt of a new run has its range partition too.
	c := claimOne(t, db, "w", time.Minute)
	if err := db.Start(ctx, c.Lease()); err != nil {
		t.Fatal(err)
	}
	if p := partitionOf(t, db, "run_attempts", "run_id", c.Run.ID); !slices.Contains(created, p) {
		t.Fatalf("attempt of run %d in %s", c.Run.ID, p)
	}
	// Nothing more to create until time passes.
	again, err := db.EnsureRunPartitions(ctx, time.Hour, 3*time.Hour)
	if err != nil || len(again) != 0 {
		t.Fatalf("second call created %v (%v)", again, err)
	}
	runs, attempts, err := db.RunPartitions(ctx)
	if err != nil || len(runs) < 4 || len(attempts) < 2 {
		t.Fatalf("partitions %v %v (%v)", runs, attempts, err)
	}
}

// A job_runs partition past the retention is dropped whole with its
// terminal runs, unless it holds an unfinished run: then it stays, whole,
// until that run is finished. An attempts partition goes once no run of
// its id range is left.
func TestRunPartitionsDroppedWhole(t *testing.T) {
	db, ctx, j := parallelJob(t, "0 0 1 1 *")
	if _, err := db.EnsureRunPartitions(ctx, time.Minute, 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	done1, p1 := insertRunAt(t, db, j.ID, "90 seconds", "succeeded")
	done2, p2 := insertRunAt(t, db, j.ID, "130 seconds", "dead")
	straggler, p2b := insertRunAt(t, db, j.ID, "140 seconds", "pending")
	if p1 == p2 || p2 != p2b || p1 == "job_runs_default" {
		t.Fatalf("partitions %s %s %s", p1, p2, p2b)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO run_attempts (run_id, attempt, worker_id, started_at) VALUES
		($1, 1, 'w', now()), ($2, 1, 'w', now()), ($3, 1, 'w', now())`, done1, done2, straggler); err != nil {
		t.Fatal(err)
	}
	// Let the identity pass the attempts' range, as if many runs had come
	// since: only the runs left decide whether the range may go.
	attemptsPart := partitionOf(t, db, "run_attempts", "run_id", straggler)
	if _, err := db.Pool.Exec(ctx, `SELECT setval('job_runs_id_seq', $1)`, 10_000_000); err != nil {
		t.Fatal(err)
	}
	far, _ := insertRunAt(t, db, j.ID, "5 years", "pending")

	// Retention -10 min: every partition ending before now+10min is past it.
	res, err := db.PruneRunPartitions(ctx, -10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Dropped, p1) || slices.Contains(res.Dropped, p2) || !slices.Contains(res.Kept, p2) {
		t.Fatalf("first prune %+v: want %s dropped, %s kept", res, p1, p2)
	}
	if slices.Contains(res.Dropped, attemptsPart) {
		t.Fatalf("attempts partition %s dropped while run %d lives", attemptsPart, straggler)
	}
	var left int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM job_runs WHERE id = ANY($1)`,
		[]int64{done1, done2, straggler, far}).Scan(&left); err != nil || left != 3 {
		t.Fatalf("%d of the runs left (%v), want the kept partition's two and the far one", left, err)
	}
	var attempts int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM run_attempts_all WHERE run_id = $1`, straggler).Scan(&attempts); err != nil || attempts != 1 {
		t.Fatalf("the kept run has %d attempts (%v)", attempts, err)
	}

	// The straggler finishes: its partition goes at the next prune, and
	// the attempts with it.
	if _, err := db.Pool.Exec(ctx, `UPDATE job_runs SET status = 'succeeded', finished_at = now() WHERE id = $1`, straggler); err != nil {
		t.Fatal(err)
	}
	res, err = db.PruneRunPartitions(ctx, -10*time.Minute)
	if err != nil || !slices.Contains(res.Dropped, p2) || !slices.Contains(res.Dropped, attemptsPart) || len(res.Kept) != 0 {
		t.Fatalf("second prune %+v (%v): want %s and %s dropped", res, err, p2, attemptsPart)
	}
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM job_runs WHERE id = ANY($1)`,
		[]int64{done1, done2, straggler, far}).Scan(&left); err != nil || left != 1 {
		t.Fatalf("%d runs left (%v), want the far pending one", left, err)
	}
	// Inserts still find a partition after drops, and creating ahead
	// goes on from where it was.
	if _, err := db.EnsureRunPartitions(ctx, time.Minute, 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, part := insertRunAt(t, db, j.ID, "1 minute", "pending"); part == "job_runs_default" {
		t.Fatalf("run after the drops went to %s", part)
	}
}

func TestRunPartitionWidth(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ retention, want time.Duration }{
		{7 * 24 * time.Hour, 24 * time.Hour},
		{24 * time.Hour, 6 * time.Hour},
		{2 * time.Hour, 15 * time.Minute},
		{2 * time.Minute, time.Minute},
		{time.Second, time.Minute},
	} {
		if got := sql.RunPartitionWidth(c.retention); got != c.want {
			t.Errorf("width for %v: %v, want %v", c.retention, got, c.want)
		}
	}
}

var seqScanRe = regexp.MustCompile(`Seq Scan on (job_runs\w*)`)

// bigSeqScans returns the job_runs partitions a plan reads whole that hold
// more than a thousand rows. An empty partition (the legacy or the default
// one of a test database) is rightly scanned rather than its index read:
// that costs nothing; so is one of a few pages (the tests' history lands
// a few hundred rows in the partition its first seconds fall in when they
// are the end of an hour: the planner then rightly read its 2-3 pages,
// and a bound of a hundred rows failed the test now and then).
func bigSeqScans(t *testing.T, db *sql.DB, plan string) []string {
	t.Helper()
	var big []string
	for _, m := range seqScanRe.FindAllStringSubmatch(plan, -1) {
		var rows float64
		if err := db.Pool.QueryRow(t.Context(), "SELECT reltuples FROM pg_class WHERE relname = $1", m[1]).Scan(&rows); err != nil {
			t.Fatalf("rows of %s: %v", m[1], err)
		}
		if rows > 1000 {
			big = append(big, m[1])
		}
	}
	return big
}

// Creating partitions while runs are inserted into their ranges: no
// insert fails. (An insert routed to the default partition under the old
// bounds, and held there by the creation, would fail its partition check
// once the range exists, were writes not held off during the creation.)
func TestRunPartitionsCreatedUnderInserts(t *testing.T) {
	db, ctx, j := parallelJob(t, "0 0 1 1 *")
	stop := make(chan struct{})
	errs := make(chan error, 4)
	var inserted atomic.Int64
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				// Spread over the next 6 hours: ranges that exist and ranges
				// about to be created. (Over 12 hours, 48 creations, each
				// moving the default partition's ever more rows, took a
				// minute of a loaded test run and proved no more.)
				_, err := db.Pool.Exec(ctx, `INSERT INTO job_runs (job_id, scheduled_at, trigger)
					VALUES ($1, now() + ($2::int % 360) * interval '1 minute', 'manual')`, j.ID, i*7+w)
				if err != nil {
					errs <- err
					return
				}
				inserted.Add(1)
			}
		})
	}
	for h := 1; h <= 6; h++ {
		if _, err := db.EnsureRunPartitions(ctx, 15*time.Minute, time.Duration(h)*time.Hour); err != nil && !errors.Is(err, sql.ErrPartitionBusy) {
			t.Error(err)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("an insert failed while partitions were created: %v", err)
	}
	t.Logf("%d runs inserted meanwhile", inserted.Load())
	if inserted.Load() == 0 {
		t.Fatal("no insert ran")
	}
}

// claimableDef is job_runs_claimable_idx as migration 016 defines it:
// pending runs that are not held, in claim order.
var claimableDef = regexp.MustCompile(`USING btree \(available_at, id\) WHERE \(\(status = 'pending'::text\) AND \(NOT held\)\)$`)

// The partitioned job_runs and every partition of it (legacy, default,
// and those the leader creates) carry the claimable index with migration
// 016's predicate (NOT held), each partition's copy attached to the
// parent's: a partition without it would make the claim read its held
// runs, or all of its rows.
func TestClaimableIndexOnEveryPartition(t *testing.T) {
	db, ctx := parallelDB(t)
	if _, err := db.EnsureRunPartitions(ctx, time.Hour, 3*time.Hour); err != nil {
		t.Fatal(err)
	}
	var parentIdx string
	if err := db.Pool.QueryRow(ctx, `SELECT i.indexrelid::regclass::text FROM pg_index i
		 WHERE i.indrelid = 'job_runs'::regclass AND pg_get_indexdef(i.indexrelid) ~ $1`,
		claimableDef.String()).Scan(&parentIdx); err != nil {
		t.Fatalf("job_runs has no claimable index with NOT held: %v", err)
	}
	rows, err := db.Pool.Query(ctx, `
		SELECT c.relname,
		       (SELECT array_agg(pg_get_indexdef(x.inhrelid)) FROM pg_inherits x JOIN pg_index i ON i.indexrelid = x.inhrelid
		         WHERE x.inhparent = $1::regclass AND i.indrelid = c.oid)
		  FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid
		 WHERE h.inhparent = 'job_runs'::regclass ORDER BY c.relname`, parentIdx)
	if err != nil {
		t.Fatal(err)
	}
	type part struct {
		name string
		defs []string
	}
	parts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (part, error) {
		var p part
		return p, r.Scan(&p.name, &p.defs)
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range parts {
		names = append(names, p.name)
		if len(p.defs) != 1 || !claimableDef.MatchString(p.defs[0]) {
			t.Errorf("partition %s: copies of %s %q, want one, with NOT held", p.name, parentIdx, p.defs)
		}
	}
	if !slices.Contains(names, "job_runs_legacy") || !slices.Contains(names, "job_runs_default") || len(names) < 5 {
		t.Fatalf("partitions %v: want the legacy, the default and those created ahead", names)
	}
}
