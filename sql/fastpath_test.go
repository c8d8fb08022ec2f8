package sql_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// The claim walks job_runs_claimable_idx in claim order and stops after n
// rows, however many runs are due and however they spread over jobs: a
// plan that sorts every due run costs tens of milliseconds per claim at
// 40,000 due runs, and the planner picked one when the job's conditions
// were a join.
func TestClaimWalksTheClaimableIndex(t *testing.T) {
	db, ctx, one := parallelJob(t, "0 0 1 1 *")
	insertPending(t, db, one.ID, 20000)
	// And many one-shot jobs with one run each, as a burst has.
	if _, err := db.Pool.Exec(ctx, `
		WITH j AS (
			INSERT INTO jobs (name, run_at, target_url)
			SELECT 'burst-' || g, now() + interval '1 year', 'http://127.0.0.1:9/' FROM generate_series(1, 5000) g
			RETURNING id)
		INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at)
		SELECT id, now(), 'manual', now() - interval '1 second' FROM j`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, "ANALYZE jobs, job_runs"); err != nil {
		t.Fatal(err)
	}
	// The claim reads a job by its key for each run it takes, whatever
	// the planner guesses of how many it takes: a walk of jobs (a merge
	// or hash join) costs as much as jobs is long, in every claim. With
	// nested loops disfavoured, a join the planner is free to choose
	// shows as one.
	plan, err := sql.ExplainGenericWith(ctx, db, []string{
		"SET LOCAL enable_nestloop = off", "SET LOCAL enable_hashjoin = on", "SET LOCAL enable_mergejoin = on",
	}, sql.ClaimSQLForTest, "text, int, bigint, bigint", "'explain', 100, 60000000, 20000")
	if err != nil {
		t.Fatal(err)
	}
	if walks := unkeyedScans(plan, `on jobs( j\w*)?$`); len(walks) > 0 {
		t.Fatalf("the claim reads jobs other than by a run's job_id: %q\n%s", walks, strings.Join(plan, "\n"))
	}
	for _, n := range []int{1, 32, 100} {
		// The plan for n's value, and the generic plan the claim runs from
		// (sql.Pool.QueryPlannedOnce), whose LIMIT the planner guesses.
		for _, explain := range []func() ([]string, error){
			func() ([]string, error) { return sql.ExplainClaim(ctx, db, n) },
			func() ([]string, error) { return sql.ExplainClaimGeneric(ctx, db, n) },
		} {
			plan, err := explain()
			if err != nil {
				t.Fatal(err)
			}
			text := strings.Join(plan, "\n")
			// The partitions' copies of job_runs_claimable_idx: named after it
			// on the legacy partition, after its columns on the others.
			if !claimableScan.MatchString(text) || len(bigSeqScans(t, db, text)) > 0 {
				t.Fatalf("claim of %d does not walk the claimable index:\n%s", n, text)
			}
		}
	}
}

var claimableScan = regexp.MustCompile(`Index Scan using job_runs\w*_(claimable_idx|available_at_id_idx)`)

// unkeyedScans returns the scans in plan (EXPLAIN's text, a line a row,
// costs off) of a relation the line's end matches (a regexp such as
// `on jobs j$`) that read it other than by an index condition: a
// sequential scan, or an index read whole.
func unkeyedScans(plan []string, relation string) []string {
	re := regexp.MustCompile(relation)
	var walks []string
	for i, line := range plan {
		if !strings.Contains(line, "Scan") || !re.MatchString(line) {
			continue
		}
		if i+1 == len(plan) || !strings.Contains(plan[i+1], "Index Cond: (") {
			walks = append(walks, strings.TrimSpace(line))
		}
	}
	return walks
}

// A first attempt that succeeds before Start ran is recorded on the run,
// and shown as the run's one attempt with everything a run_attempts row
// holds; an attempt that Start recorded stays a run_attempts row, shown
// once.
func TestFirstAttemptRecordedOnTheRun(t *testing.T) {
	db, ctx, j := parallelJob(t, "0 0 1 1 *")
	insertPending(t, db, j.ID, 2)

	quick := claimOne(t, db, "w-quick", time.Minute)
	began := time.Now().Add(-15 * time.Millisecond)
	res, err := db.Complete(ctx, []sql.Outcome{{Lease: quick.Lease(), Success: true, StatusCode: 204,
		Body: "ok", StartedAt: began, FinishedAt: began.Add(15 * time.Millisecond)}})
	if err != nil || res[0].Err != nil || res[0].Status != chronos.StatusSucceeded {
		t.Fatalf("complete: %+v %v", res, err)
	}
	var rows int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM run_attempts WHERE run_id = $1", quick.Run.ID).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 0 {
		t.Fatalf("a quick first success wrote %d run_attempts rows, want 0", rows)
	}
	run := mustRun(t, db, quick.Run.ID)
	if len(run.Attempts) != 1 {
		t.Fatalf("attempts %+v, want the one attempt", run.Attempts)
	}
	a := run.Attempts[0]
	if a.Attempt != 1 || a.WorkerID != "w-quick" || a.StatusCode == nil || *a.StatusCode != 204 || a.Error != nil ||
		a.ResponseBody == nil || *a.ResponseBody != "ok" || a.DurationMS == nil || *a.DurationMS != 15 ||
		a.FinishedAt == nil || !a.StartedAt.Equal(*run.StartedAt) || !a.FinishedAt.Equal(*run.FinishedAt) {
		t.Fatalf("inline attempt %+v of run %+v", a, run)
	}

	slow := claimOne(t, db, "w-slow", time.Minute)
	if err := db.Start(ctx, slow.Lease()); err != nil {
		t.Fatal(err)
	}
	res, err = db.Complete(ctx, []sql.Outcome{{Lease: slow.Lease(), Success: true, StatusCode: 200,
		StartedAt: began, FinishedAt: time.Now(), StartRecorded: true}})
	if err != nil || res[0].Err != nil || res[0].Status != chronos.StatusSucceeded {
		t.Fatalf("complete: %+v %v", res, err)
	}
	run = mustRun(t, db, slow.Run.ID)
	if len(run.Attempts) != 1 || run.Attempts[0].WorkerID != "w-slow" || *run.Attempts[0].StatusCode != 200 {
		t.Fatalf("started attempt %+v", run.Attempts)
	}
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM run_attempts WHERE run_id = $1", slow.Run.ID).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 1 {
		t.Fatalf("a started attempt has %d run_attempts rows, want 1", rows)
	}
}

// ClaimAhead takes a run due within ahead, after the due ones, and says
// how long until its instant; a plain Claim leaves it.
func TestClaimAheadTakesRunsDueWithinIt(t *testing.T) {
	db, ctx, j := parallelJob(t, "0 0 1 1 *")
	var soon, later, due int64
	if err := db.Pool.QueryRow(ctx, `
		WITH s AS (INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at)
		           VALUES ($1, now() + interval '5 s', 'manual', now() + interval '5 s') RETURNING id),
		     l AS (INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at)
		           VALUES ($1, now() + interval '1 hour', 'manual', now() + interval '1 hour') RETURNING id),
		     d AS (INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at)
		           VALUES ($1, now(), 'manual', now() - interval '1 ms') RETURNING id)
		SELECT s.id, l.id, d.id FROM s, l, d`, j.ID).Scan(&soon, &later, &due); err != nil {
		t.Fatal(err)
	}
	got, err := db.Claim(ctx, "plain", 10, time.Minute)
	if err != nil || len(got) != 1 || got[0].Run.ID != due || got[0].Wait != 0 {
		t.Fatalf("plain claim: %+v %v, want only the due run %d with no wait", got, err, due)
	}
	// Due in 5 s, claimed up to 10 s ahead: a loaded machine may take
	// seconds between the insert and the claim.
	got, err = db.ClaimAhead(ctx, "ahead", 10, time.Minute, 10*time.Second)
	if err != nil || len(got) != 1 || got[0].Run.ID != soon {
		t.Fatalf("claim ahead: %+v %v, want run %d (due in 5 s) and not %d (due in an hour)", got, err, soon, later)
	}
	if w := got[0].Wait; w <= 0 || w > 5*time.Second {
		t.Fatalf("wait %v, want in (0, 5s]", w)
	}
}

// NextAvailable runs from the connection's generic plan (planned for each
// call it took 20 ms to plan, and its cost, which grows with the backlog,
// crossed jit_above_cost: 750 ms of JIT a call in the dispatcher's loop,
// and a sustained load collapsed from 5,000 runs/s to under 100). That
// generic plan walks the claimable index in order and stops: no scan and
// sort of the backlog.
func TestNextAvailableWalksTheClaimableIndex(t *testing.T) {
	db, ctx, one := parallelJob(t, "0 0 1 1 *")
	insertPending(t, db, one.ID, 20000)
	if _, err := db.Pool.Exec(ctx, "ANALYZE job_runs"); err != nil {
		t.Fatal(err)
	}
	plan, err := sql.ExplainGeneric(ctx, db, sql.NextAvailableSQL, "int", "32")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(plan, "\n")
	if !claimableScan.MatchString(text) || len(bigSeqScans(t, db, text)) > 0 {
		t.Fatalf("NextAvailable's generic plan does not walk the claimable index:\n%s", text)
	}
	at, err := db.NextAvailable(ctx)
	if err != nil || at == nil {
		t.Fatalf("NextAvailable with 20,000 pending runs = %v, %v; want the first one's instant", at, err)
	}
}
