package sql_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// TestDeliveryPathWalksIndexesOnStaleStatistics: the claim and the
// completion walk their indexes even when the statistics say job_runs is
// empty and 20,000 runs are due, as they do in a burst between two
// autovacuum analyzes. On such statistics the planner took a bitmap scan
// of every due run, filtered each and sorted them all to lease the first
// hundred (325 ms per claim, every claim of the burst: quadratic), and a
// completion ANDed the lease index's every entry with the run id's.
// (Sorting is left allowed: with sorts off the planner's choices inside
// the statement's triggers made a claim take seconds.)
func TestDeliveryPathWalksIndexesOnStaleStatistics(t *testing.T) {
	db, ctx := parallelDB(t)
	job := jobWithPartitions(t, db)
	// Statistics of a quiet hour (a history of finished runs), then no
	// analyze: stale, as in a burst. The history lies in the 20 s the
	// burst will, so that it is in the partition (or two) the burst goes
	// to: in the past it was in the legacy partition, where the burst
	// went only while the test ran within the minute the template was
	// migrated in; later (or at a few seconds to the hour) the burst went
	// to a partition analyzed empty, and the test failed on statistics no
	// burst between two analyzes has.
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO job_runs (job_id, scheduled_at, trigger, status, available_at, finished_at)
		SELECT $1, now() + make_interval(secs => g / 100.0), 'manual', 'succeeded', now() - make_interval(secs => g), now()
		  FROM generate_series(1, 2000) g`, job.ID); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"ANALYZE job_runs",
		`DO $$ DECLARE p regclass; BEGIN
		   FOR p IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'job_runs'::regclass LOOP
		     EXECUTE format('ALTER TABLE %s SET (autovacuum_enabled = off)', p);
		   END LOOP; END $$`,
	} {
		if _, err := db.Pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at)
		SELECT $1, now() + make_interval(secs => g / 1000.0), 'manual', now() - interval '1 second'
		  FROM generate_series(1, 20000) g`, job.ID); err != nil {
		t.Fatal(err)
	}
	claim := explain(t, db.Pool.QueryIndexWalk, sql.ClaimSQLForTest, "w", 100, int64(30e6), int64(0))
	if bitmapOfDueRuns(claim) {
		t.Errorf("the claim plans a bitmap scan of the due runs:\n%s", claim)
	}
	ids, now := []int64{1, 2, 3}, time.Now()
	complete := explain(t, db.Pool.QueryIndexWalk, sql.CompleteSQLForTest, ids, []string{"w", "w", "w"}, []int32{1, 1, 1},
		[]bool{true, true, true}, []*int32{nil, nil, nil}, []*string{nil, nil, nil}, []*string{nil, nil, nil},
		[]int64{0, 0, 0}, []*int64{nil, nil, nil}, []bool{false, false, false}, []time.Time{now, now, now})
	if bitmapOfDueRuns(complete) {
		t.Errorf("the completion plans a bitmap scan:\n%s", complete)
	}
	// The plans they run from (sql.Pool.QueryPlannedOnce), made without
	// the values: no bitmap scan, no sequential scan of a partition.
	generic := map[string][3]string{
		"claim": {sql.ClaimSQLForTest, "text, int, bigint, bigint", "'w', 100, 30000000, 0"},
		"completion": {sql.CompleteSQLForTest,
			"bigint[], text[], int[], bool[], int[], text[], text[], bigint[], bigint[], bool[], timestamptz[]",
			"'{1,2,3}', '{w,w,w}', '{1,1,1}', '{t,t,t}', '{NULL,NULL,NULL}', '{NULL,NULL,NULL}', '{NULL,NULL,NULL}', " +
				"'{0,0,0}', '{NULL,NULL,NULL}', '{f,f,f}', array[now(), now(), now()]"},
		"start": {sql.StartSQLForTest, "bigint[], text[], int[], timestamptz[]",
			"'{1,2,3}', '{w,w,w}', '{1,1,1}', array[now(), now(), now()]"},
	}
	for name, g := range generic {
		plan, err := sql.ExplainGeneric(ctx, db, g[0], g[1], g[2])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		text := strings.Join(plan, "\n")
		if bitmapOfDueRuns(text) || len(bigSeqScans(t, db, text)) > 0 {
			t.Errorf("the %s's generic plan scans a partition of due runs:\n%s", name, text)
		}
		// The completion and the start find the runs they write (r) by
		// key, one probe a run, never by reading an index whole; all of
		// them find jobs so.
		relations := `on jobs( j\w*)?$`
		if name != "claim" {
			relations = `on (job_runs\w* r(_\d+)?|jobs j(_\d+)?)$`
		}
		if walks := unkeyedScans(plan, relations); len(walks) > 0 {
			t.Errorf("the %s's generic plan reads %q other than by key:\n%s", name, walks, text)
		}
	}

	// A worker's write of its run looks in the run's partition only (its
	// lease carries the partition key), not in each of the dozen a week's
	// retention keeps.
	var run struct {
		id int64
		at time.Time
	}
	if err := db.Pool.QueryRow(ctx, "SELECT id, scheduled_at FROM job_runs WHERE status = 'pending' LIMIT 1").Scan(&run.id, &run.at); err != nil {
		t.Fatal(err)
	}
	renew := explain(t, db.Pool.QueryIndexWalk, "UPDATE job_runs SET leased_until = now() WHERE "+sql.FenceForTest, run.id, "w", 1, run.at)
	if n := len(partitionsIn(renew)); n != 1 {
		t.Errorf("a fenced write of one run scans %d partitions, want 1:\n%s", n, renew)
	}
	// So does the generic plan it runs from (sql.Pool.ExecPlannedOnce),
	// pruned when it starts.
	plan, err := sql.ExplainGeneric(ctx, db, "UPDATE job_runs SET leased_until = now() WHERE "+sql.FenceForTest,
		"bigint, text, int, timestamptz", fmt.Sprintf("%d, 'w', 1, '%s'", run.id, run.at.Format(time.RFC3339Nano)))
	if err != nil {
		t.Fatal(err)
	}
	// (It names every partition as a possible target of the update; it
	// scans one.)
	var scans []string
	for _, line := range plan {
		if strings.Contains(line, " Scan ") {
			scans = append(scans, line)
		}
	}
	if n := len(partitionsIn(strings.Join(scans, "\n"))); n != 1 {
		t.Errorf("the generic plan of a fenced write of one run scans %d partitions, want 1:\n%s", n, strings.Join(plan, "\n"))
	}
	// By the run's key, not by reading an index of the partition whole.
	if walks := unkeyedScans(plan, `on job_runs\w*( \w+)?$`); len(walks) > 0 {
		t.Errorf("the generic plan of a fenced write of one run reads %q other than by key:\n%s", walks, strings.Join(plan, "\n"))
	}

	// The settings were the statement's alone, the claim's included.
	show := func() (v [3]string) {
		if err := db.Pool.QueryRow(ctx, "SELECT current_setting('enable_bitmapscan'), current_setting('jit'), "+
			"current_setting('plan_cache_mode') || current_setting('enable_seqscan')").Scan(&v[0], &v[1], &v[2]); err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := show()
	rows, err := db.Pool.QueryPlannedOnce(ctx, sql.ClaimSQLForTest, "w", 1, int64(30e6), int64(0))
	if err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if after := show(); after != before || before[0] != "on" {
		t.Errorf("enable_bitmapscan, jit, plan_cache_mode+enable_seqscan: %v after the statements, %v before", after, before)
	}
}

// partitionName matches a job_runs partition's name (not an index's, not
// an alias).
var partitionName = regexp.MustCompile(`^job_runs_(p\d{8}_\d{6}|legacy|default)$`)

// partitionsIn lists the job_runs partitions a plan names.
func partitionsIn(plan string) map[string]bool {
	seen := map[string]bool{}
	for _, f := range strings.Fields(plan) {
		if partitionName.MatchString(f) {
			seen[f] = true
		}
	}
	return seen
}

// noAutovacuumOfRuns turns autovacuum off for the partitions of
// job_runs in this test's database only: the leader's analyze is what
// autovacuum stands in for until it wakes, and should it analyze a
// partition first, the leader finds nothing changed and a test that waits
// for the leader waits in vain (one did, in a run at load 14).
func noAutovacuumOfRuns(t *testing.T, db *sql.DB) {
	t.Helper()
	if _, err := db.Pool.Exec(t.Context(), `
		DO $$ DECLARE p regclass; BEGIN
			FOR p IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'job_runs'::regclass LOOP
				EXECUTE format('ALTER TABLE %s SET (autovacuum_enabled = false)', p);
			END LOOP;
		END $$`); err != nil {
		t.Fatal(err)
	}
}

// TestAnalyzeChangedTablesAfterABurst: the leader's analyze of the
// changed partitions (sql.AnalyzeChangedTables) gives the planner the
// burst's real counts, and the claim then takes the first due runs by an
// ordered walk of the claimable index instead of sorting them all.
func TestAnalyzeChangedTablesAfterABurst(t *testing.T) {
	db, ctx := parallelDB(t)
	job := jobWithPartitions(t, db)
	if _, err := db.Pool.Exec(ctx, "ANALYZE job_runs"); err != nil {
		t.Fatal(err)
	}
	noAutovacuumOfRuns(t, db)
	if got, err := db.AnalyzeChangedTables(ctx); err != nil || len(got) != 0 {
		t.Fatalf("before the burst: analyzed %v (%v), want none", got, err)
	}
	// The burst, on one connection that then publishes its statistics.
	// Its 20 s of instants sit in the middle of one hour-wide partition
	// (they line up on round hours after the first): from now on they
	// straddled the first partition's start when the test database's
	// template had just been made, and the few runs before it (in
	// job_runs_legacy, under the analyze threshold) were the partition the
	// test waited for.
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var partition string
	err = conn.QueryRow(ctx, `
		WITH ins AS (
			INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at)
			SELECT $1, date_bin('1 hour', now(), 'epoch') + interval '150 minutes' + make_interval(secs => g / 1000.0), 'manual', now() - interval '1 second'
			  FROM generate_series(1, 20000) g
			RETURNING tableoid)
		SELECT DISTINCT tableoid::regclass::text FROM ins`, job.ID).Scan(&partition)
	if err == nil {
		_, err = conn.Exec(ctx, "SELECT pg_stat_force_next_flush()")
	}
	conn.Release()
	if err != nil {
		t.Fatal(err)
	}
	var analyzed []string
	deadline := time.Now().Add(30 * time.Second)
	for !slices.Contains(analyzed, partition) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (20,000 runs inserted) was not analyzed within 30 s; analyzed %v", partition, analyzed)
		}
		time.Sleep(100 * time.Millisecond)
		got, err := db.AnalyzeChangedTables(ctx)
		if err != nil {
			t.Fatal(err)
		}
		analyzed = append(analyzed, got...)
	}
	var last *time.Time
	if err := db.Pool.QueryRow(ctx, "SELECT last_analyze FROM pg_stat_user_tables WHERE relid = $1::regclass", partition).Scan(&last); err != nil || last == nil {
		t.Fatalf("%s: last_analyze %v (%v), want set", partition, last, err)
	}

	claim := explain(t, db.Pool.QueryIndexWalk, sql.ClaimSQLForTest, "w", 100, int64(30e6), int64(0))
	// The picked CTE's plan: up to the next CTE's.
	picked := claim[strings.Index(claim, "CTE picked"):]
	picked = picked[:strings.Index(picked[1:], "CTE ")+1]
	if strings.Contains(picked[strings.Index(picked, "LockRows"):], "->  Sort ") {
		t.Errorf("after the analyze, the claim still sorts the due runs before taking the first:\n%s", picked)
	}

	// Draining the burst (each run claimed, then completed) changes no
	// count: it must not make the leader analyze the partition again and
	// again while the burst drains.
	conn, err = db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, "UPDATE job_runs SET status = 'leased', leased_by = 'w', leased_until = now() + interval '1 minute'")
	if err == nil {
		_, err = conn.Exec(ctx, "UPDATE job_runs SET status = 'succeeded', leased_by = NULL, leased_until = NULL, finished_at = now()")
	}
	if err == nil {
		_, err = conn.Exec(ctx, "SELECT pg_stat_force_next_flush()")
	}
	conn.Release()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := db.AnalyzeChangedTables(ctx); err != nil || slices.Contains(got, partition) {
		t.Errorf("after draining the burst: analyzed %v (%v), want %s left alone", got, err, partition)
	}
}

// TestAnalyzeChangedTablesAtMostOncePerGap: a partition that fills
// steadily is analyzed at most once per gap, however often it grows by a
// fifth (at 5,000 runs/s a minute-wide partition was analyzed eight to
// eleven times a minute, 200 ms of a core each); one whose row count
// jumps fourfold is analyzed at once all the same (a burst).
func TestAnalyzeChangedTablesAtMostOncePerGap(t *testing.T) {
	db, ctx := parallelDB(t)
	job := jobWithPartitions(t, db)
	noAutovacuumOfRuns(t, db)
	// insert adds n runs to the partition of now() + 1 minute, publishes
	// the statistics and returns the partition's name.
	insert := func(n int) string {
		t.Helper()
		conn, err := db.Pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Release()
		var partition string
		if err := conn.QueryRow(ctx, `
			WITH ins AS (
				INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at)
				SELECT $1, date_trunc('minute', now()) + interval '1 minute', 'manual', now() + interval '1 hour'
				  FROM generate_series(1, $2) g
				RETURNING tableoid)
			SELECT DISTINCT tableoid::regclass::text FROM ins`, job.ID, n).Scan(&partition); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "SELECT pg_stat_force_next_flush()"); err != nil {
			t.Fatal(err)
		}
		return partition
	}
	// analyzedWithin polls until partition is analyzed with gap, or d.
	analyzedWithin := func(partition string, gap, d time.Duration) bool {
		t.Helper()
		for deadline := time.Now().Add(d); ; {
			got, err := sql.AnalyzeChangedTablesForTest(ctx, db, gap)
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(got, partition) {
				return true
			}
			if time.Now().After(deadline) {
				return false
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	partition := insert(6000)
	if !analyzedWithin(partition, time.Hour, 30*time.Second) {
		t.Fatalf("%s, never analyzed, got 6,000 runs and was not analyzed within 30 s", partition)
	}
	// Twice as many: past the threshold, but no jump, and analyzed just
	// now.
	insert(6000)
	if analyzedWithin(partition, time.Hour, 2*time.Second) {
		t.Errorf("%s grew from 6,000 to 12,000 runs right after an analyze: analyzed again within the gap", partition)
	}
	// (The growth was seen: with no gap it is analyzed.)
	if !analyzedWithin(partition, 0, 30*time.Second) {
		t.Fatalf("%s grew from 6,000 to 12,000 runs: not analyzed even without a gap", partition)
	}
	// A jump: from 12,000 to 52,000, more than four times.
	insert(40000)
	if !analyzedWithin(partition, time.Hour, 30*time.Second) {
		t.Errorf("%s jumped from 12,000 to 52,000 runs right after an analyze: not analyzed within 30 s", partition)
	}
}

// TestAnalyzeChangedTablesSchedulesEveryHerd: job_schedules is analyzed
// each time a herd moved that many of its rows, however soon after the
// last analyze: a herd changes no row count, so the gap that spares a
// filling partition would leave the materializer's due query planned on
// the previous herd's next_run_at for half a minute.
func TestAnalyzeChangedTablesSchedulesEveryHerd(t *testing.T) {
	db, ctx := parallelDB(t)
	jobs := make([]*chronos.Job, 6000)
	for i := range jobs {
		jobs[i] = cronJob("0 0 1 1 *")
	}
	for i := 0; i < len(jobs); i += sql.CreateMaxBatch {
		if err := db.CreateJobs(ctx, jobs[i:min(i+sql.CreateMaxBatch, len(jobs))]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Pool.Exec(ctx, "ALTER TABLE job_schedules SET (autovacuum_enabled = false)"); err != nil {
		t.Fatal(err)
	}
	for herd := 1; herd <= 2; herd++ {
		conn, err := db.Pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = conn.Exec(ctx, "UPDATE job_schedules SET next_run_at = now() + make_interval(hours => $1)", herd)
		if err == nil {
			_, err = conn.Exec(ctx, "SELECT pg_stat_force_next_flush()")
		}
		conn.Release()
		if err != nil {
			t.Fatal(err)
		}
		analyzed := false
		for deadline := time.Now().Add(30 * time.Second); !analyzed; {
			got, err := sql.AnalyzeChangedTablesForTest(ctx, db, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			analyzed = slices.Contains(got, "job_schedules")
			if !analyzed && time.Now().After(deadline) {
				t.Fatalf("herd %d moved 6,000 schedules: job_schedules not analyzed within 30 s", herd)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// bitmapIndexScan names the index of a bitmap scan in a plan.
var bitmapIndexScan = regexp.MustCompile(`Bitmap Index Scan on (\S+)`)

// bitmapOfDueRuns reports whether plan scans job_runs with a bitmap other
// than one of the lease index alone (migration 001's job_runs_leases_idx,
// a partition's <partition>_leased_until_idx): that index holds only the
// runs in flight, a worker pool's worth, so its bitmap is no walk of the
// due runs, and the planner takes it on a partition whose statistics know
// no run in flight. Any other bitmap, or the lease index ANDed with
// another (the completion's old plan), reads the due runs.
func bitmapOfDueRuns(plan string) bool {
	if strings.Contains(plan, "BitmapAnd") || strings.Contains(plan, "BitmapOr") {
		return true
	}
	for _, m := range bitmapIndexScan.FindAllStringSubmatch(plan, -1) {
		if m[1] != "job_runs_leases_idx" && !strings.HasSuffix(m[1], "_leased_until_idx") {
			return true
		}
	}
	return false
}
