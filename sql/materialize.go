package sql

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/jackc/pgx/v5"
)

// MaterializeResult says what one Materialize call did.
type MaterializeResult struct {
	Jobs     int            // jobs examined
	Created  int            // runs inserted
	Skipped  int            // occurrences skipped by overlap policy, in all
	Runs     []*chronos.Run // the runs inserted
	Skips    map[int64]int  // occurrences skipped by overlap policy, by job
	CatchUps []CatchUp      // the catch-up run of each job with a gap under misfire "one"
	Now      time.Time      // the scheduling clock this call used

	folded  map[int64]int  // runs created ahead folded into a catch-up, by job
	oneGaps map[int64]bool // jobs with a gap under misfire "one"
	allGaps []int64        // jobs with a gap under misfire "all"
	// Missed counts, by job and reason (chronos.SkipExcluded, SkipMisfire,
	// SkipDeadline), the occurrences not run for a reason other than
	// overlap: excluded dates, a misfire policy, a starting deadline
	// (including runs created earlier and now marked "missed").
	Missed map[int64]map[string]int
}

func (r *MaterializeResult) miss(jobID int64, reason string, n int) {
	if n <= 0 {
		return
	}
	if r.Missed == nil {
		r.Missed = map[int64]map[string]int{}
	}
	if r.Missed[jobID] == nil {
		r.Missed[jobID] = map[string]int{}
	}
	r.Missed[jobID][reason] += n
}

// CatchUp is one job's gap: one catch-up run at At stands for every
// occurrence missed, including Folded runs created ahead before the gap
// that never started and were deleted in its favour.
type CatchUp struct {
	JobID  int64
	At     time.Time
	Folded int
}

// maxOccurrencesPerJob bounds one job's share of one call (a per-second
// cron with a long lookahead); the rest waits for the next call.
const maxOccurrencesPerJob = 1000

// dueJobsSQL selects the jobs to materialize from their schedule rows,
// locked so that two materializers (two leaders, briefly) take disjoint
// jobs: the schedule row FOR UPDATE, which is what an API write of the job
// waits for (see UpdateJob), and the job's row FOR KEY SHARE, which the
// runs' foreign key takes anyway, so that a delete of the job waits for
// this transaction instead of deadlocking with it. A job due now is always
// taken. A job due within the lookahead is taken to pre-create its run,
// unless its overlap policy could hold that run back: a skip job is looked
// ahead for only while it has no run pending, leased or running, a
// queue_one job while it has none pending (otherwise its occurrence is
// decided when due, since the active run may be done by then); leaving
// the others out keeps a "call again while the batch is full" loop from
// re-examining them.
//
// The job's condition is a scalar subquery, not a join, on purpose (as in
// claimSQL): with job_schedules the only relation in the inner FROM, the
// plan is always a walk of job_schedules_due_idx that stops after $3 rows,
// whatever the planner guesses (a herd inserted a moment ago has no
// statistics yet; as a join, a seq scan and sort of every due row could
// look cheaper, per batch).
const dueJobsSQL = `
	SELECT ` + scheduleColumns + ` FROM (
		SELECT s.job_id, s.enabled, s.next_run_at FROM job_schedules s
		 WHERE s.enabled AND s.next_run_at <= $2
		   AND (s.next_run_at <= $1 OR ` + lookAheadSQL + `)
		 ORDER BY s.next_run_at
		 LIMIT $3
		   FOR UPDATE OF s SKIP LOCKED
	) s JOIN jobs j ON j.id = s.job_id
	   FOR KEY SHARE OF j SKIP LOCKED`

// lookAheadSQL is whether the job of schedule row s may have a run created
// before its occurrence is due: always for overlap allow, for skip while
// it has no run pending, leased or running, for queue_one while it has
// none pending (see dueJobsSQL).
const lookAheadSQL = `(SELECT j.overlap = 'allow'
		                OR (j.overlap = 'skip' AND NOT EXISTS (
		                        SELECT 1 FROM job_runs r
		                         WHERE r.job_id = j.id AND r.status IN ('pending', 'leased', 'running')))
		                OR (j.overlap = 'queue_one' AND NOT EXISTS (
		                        SELECT 1 FROM job_runs r WHERE r.job_id = j.id AND r.status = 'pending'))
		              FROM jobs j WHERE j.id = s.job_id)`

// EarlyLookahead is how far ahead of its occurrence the run of a sparse
// cron job may be created: a job whose next occurrence comes more than the
// lookahead after the one before it has that run created as soon as the
// one before it is due, but no earlier than this (migration 031). So a
// herd (every job of a cluster due at the top of the hour) has its runs
// before its instant, and the instant is a burst of delivery alone,
// instead of creation and delivery of the same runs competing for the
// same cores; and a job never has more than one run created ahead beyond
// the lookahead.
const EarlyLookahead = 30 * time.Second

// earlyJobsSQL selects, like dueJobsSQL, the jobs whose next run may be
// created early (materialize_at <= now, see EarlyLookahead), walking
// job_schedules_early_idx: only the sparse jobs have an entry. The ones
// within the lookahead ($2) are dueJobsSQL's, and a row whose next_run_at
// is further than EarlyLookahead away ($3) is left alone.
const earlyJobsSQL = `
	SELECT ` + scheduleColumns + ` FROM (
		SELECT s.job_id, s.enabled, s.next_run_at FROM job_schedules s
		 WHERE s.enabled AND s.materialize_at IS NOT NULL AND s.materialize_at <= $1
		   AND s.next_run_at > $2 AND s.next_run_at <= $3
		   AND ` + lookAheadSQL + `
		 ORDER BY s.materialize_at
		 LIMIT $4
		   FOR UPDATE OF s SKIP LOCKED
	) s JOIN jobs j ON j.id = s.job_id
	   FOR KEY SHARE OF j SKIP LOCKED`

// materializeSettings are the settings of the materializer's transaction
// (set_config's is_local): a synchronous commit (see Materialize), and
// nothing but index walks and probes where an index can serve: no
// sequential scan, sort, hash or merge join. Each statement reads one
// batch of jobs (a walk of job_schedules_due_idx or _early_idx in order)
// and what goes with them (probes by key), and the right plan for that
// never depends on the tables' statistics. But a herd is a bulk insert,
// and on statistics taken before it the planner read every job_schedules
// and every jobs row to advance or look up a batch of 2,000 (a hash
// join), and sorted every herd row by materialize_at to take the first
// 2,000, in each of the herd's fifty batches: seconds of Postgres time
// that grow with the square of the herd
// (TestMaterializerReadsAHerdByIndex).
var materializeSettings = []string{
	"set_config('synchronous_commit', 'on', true)", noSeqScanSetting,
	"set_config('enable_sort', 'off', true)", noHashJoinSetting, noMergeJoinSetting,
}

// advanceSchedulesSQL writes the next_run_at and materialize_at of each
// job of a batch: $1 the jobs, $2 and $3 the values.
const advanceSchedulesSQL = `
	UPDATE job_schedules s SET next_run_at = v.next, materialize_at = v.early
	  FROM unnest($1::bigint[], $2::timestamptz[], $3::timestamptz[]) AS v(id, next, early)
	 WHERE s.job_id = v.id`

// Materialize turns the due occurrences of up to batch jobs with
// next_run_at <= now+lookahead into pending runs (available_at = the
// scheduled instant), idempotently (UNIQUE (job_id, scheduled_at)),
// honouring overlap, with one catch-up run for a gap, and advances
// next_run_at. Call it again while it returns a full batch.
//
// now is the scheduling clock. The zero time means the database's clock,
// read once at the start of the transaction: that is what the reactor
// passes, so a leader whose own clock is off neither folds occurrences that
// are not yet due nor holds back ones that are. Tests pass a time to
// simulate its passing.
//
// It is one short transaction. Occurrences come from the job's
// chronos.Schedule (zone, DST, starts_at/ends_at, exclusions: the code the
// previews use); excluded ones are counted in Missed. Each run is
// available at its occurrence plus the job's jitter (fire_at). A job with
// a gap (more than one occurrence missed while the cluster was down or had
// no leader, counting the runs created ahead before it that never
// started: see gapOf) is handled by its misfire policy. "one" gets one
// run, flagged catch_up, for the latest missed occurrence, and then
// resumes with the first occurrence after now; the runs created ahead for
// that job before the gap which never started are deleted, so the target
// gets one late request, not several. "none" creates no run for the gap,
// deletes those runs too and counts all of it in Missed; "all" keeps them
// and creates a flagged run for each missed occurrence, the latest
// chronos.MaxMisfireRuns at most. An occurrence past the job's starting
// deadline is not created (Missed), and pending runs past it are marked
// missed.
// Overlap: allow inserts every occurrence; skip inserts none while the job
// has a pending, leased or running run (counting each due occurrence
// skipped); queue_one inserts only while the job has no pending run. A
// one-shot job materializes once; afterwards its next_run_at is null, as
// is a cron job's whose schedule has no further occurrence.
func (db *DB) Materialize(ctx context.Context, now time.Time, lookahead time.Duration, batch int) (MaterializeResult, error) {
	res := MaterializeResult{Skips: map[int64]int{}}
	if batch <= 0 {
		return res, nil
	}
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		return res, fmt.Errorf("materialize: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit

	// This transaction commits synchronously even on a reactor pool with
	// synchronous_commit=off (REACTOR_SYNCHRONOUS_COMMIT): the runs it
	// creates get their ids and are delivered under them, so a crash must
	// not take them back. Claims and completions may be lost in a crash
	// (the run is delivered again under the same id); a run may not (the
	// occurrence would be materialized again under a new id, which a
	// target deduplicating on X-Chronos-Run-Id could not recognise). The
	// faults suite's TestCrash found exactly that before this line.
	//
	// Its statements read by index only (materializeSettings).
	var dbNow time.Time
	into := make([]any, 1+len(materializeSettings)) // the settings' values are not read
	into[0] = &dbNow
	if err := tx.QueryRow(ctx, "SELECT now(), "+strings.Join(materializeSettings, ", ")).Scan(into...); err != nil {
		return res, mapErr(err, "materialize: read the clock")
	}
	if now.IsZero() {
		now = dbNow
	}
	now = now.UTC()
	res.Now = now
	horizon := now.Add(max(lookahead, 0))

	rows, err := tx.Query(ctx, dueJobsSQL, now, horizon, batch)
	jobs, err := collect(rows, err, "materialize: select due jobs", scanSchedule)
	if err != nil {
		return res, err
	}
	// The early pass takes what room the batch has left: the due and the
	// looked-ahead come first.
	early := map[int64]bool{}
	if len(jobs) < batch {
		rows, err := tx.Query(ctx, earlyJobsSQL, now, horizon, now.Add(EarlyLookahead), batch-len(jobs))
		more, err := collect(rows, err, "materialize: select jobs to create early", scanSchedule)
		if err != nil {
			return res, err
		}
		for _, j := range more {
			early[j.ID] = true
		}
		jobs = append(jobs, more...)
	}
	res.Jobs = len(jobs)
	if err := attachCalendars(ctx, tx, jobs, nil); err != nil {
		return res, err
	}

	gaps, err := foldGaps(ctx, tx, jobs, now, &res)
	if err != nil {
		return res, err
	}
	active, pending, err := overlapState(ctx, tx, jobs)
	if err != nil {
		return res, err
	}
	var (
		runJobs  []int64
		runAt    []time.Time
		runFire  []time.Time
		runCatch []bool
		jobIDs   = make([]int64, 0, len(jobs))
		nexts    = make([]*time.Time, 0, len(jobs))
		earlyAt  = make([]*time.Time, 0, len(jobs))
	)
	for _, j := range jobs {
		h := horizon
		if early[j.ID] {
			h = *j.NextRunAt // its next occurrence alone
		}
		p := plan(j, now, h, active[j.ID], pending[j.ID], gaps[j.ID])
		for _, o := range p.runs {
			runJobs = append(runJobs, j.ID)
			runAt = append(runAt, o.at)
			runFire = append(runFire, o.fireAt)
			runCatch = append(runCatch, o.catchUp)
		}
		if p.skipped > 0 {
			res.Skipped += p.skipped
			res.Skips[j.ID] += p.skipped
		}
		for reason, n := range p.missed {
			res.miss(j.ID, reason, n)
		}
		jobIDs = append(jobIDs, j.ID)
		nexts = append(nexts, p.next)
		earlyAt = append(earlyAt, p.earlyAt(j, lookahead))
	}
	if len(runJobs) > 0 {
		rows, err := tx.Query(ctx, `
			INSERT INTO job_runs (job_id, scheduled_at, trigger, catch_up, available_at, fire_at)
			SELECT job_id, at, 'schedule', catch_up, fire_at, fire_at
			  FROM unnest($1::bigint[], $2::timestamptz[], $3::bool[], $4::timestamptz[]) AS v(job_id, at, catch_up, fire_at)
			ON CONFLICT (job_id, scheduled_at) WHERE trigger = 'schedule' DO NOTHING
			RETURNING `+runColumns, runJobs, runAt, runCatch, runFire)
		res.Runs, err = collect(rows, err, "materialize: insert runs", scanRun)
		if err != nil {
			return res, err
		}
		res.Created = len(res.Runs)
		for _, r := range res.Runs {
			if r.CatchUp && res.oneGaps[r.JobID] {
				res.CatchUps = append(res.CatchUps, CatchUp{JobID: r.JobID, At: r.ScheduledAt, Folded: res.folded[r.JobID]})
			}
		}
	}
	if len(jobIDs) > 0 {
		// The narrow schedule rows only: jobs is not written.
		_, err := tx.Exec(ctx, advanceSchedulesSQL, jobIDs, nexts, earlyAt)
		if err != nil {
			return res, mapErr(err, "materialize: advance next_run_at")
		}
	}
	if db.Vouches(ctx) {
		gap, err := vouch(ctx, tx, now, dbNow, lookahead)
		if err != nil {
			return res, err
		}
		if gap {
			if err := foldEnded(ctx, tx, now, &res); err != nil {
				return res, err
			}
		}
	}
	if err := startCatchUps(ctx, tx, res.allGaps, now); err != nil {
		return res, err
	}
	if err := advanceCatchUps(ctx, tx, batch); err != nil {
		return res, err
	}
	if err := reschedule(ctx, tx, now, batch); err != nil {
		return res, err
	}
	if err := expireMissed(ctx, tx, now, batch, &res); err != nil {
		return res, err
	}
	if err := tx.Commit(ctx); err != nil {
		return res, mapErr(err, "materialize: commit")
	}
	return res, nil
}

// foldGaps finds the jobs with a gap (see gapOf) and deletes their runs
// created ahead before it that never started: under misfire "one" the
// gap's one catch-up run stands for them; under "none" they are missed
// like the rest of the gap (deleted and counted); under "all" they stay
// and run. The claim holds those runs back while the job is behind (see
// claimSQL), so none of them is in flight. It returns the catch-up instant
// of each job with a gap.
func foldGaps(ctx context.Context, tx pgx.Tx, jobs []*chronos.Job, now time.Time, res *MaterializeResult) (map[int64]time.Time, error) {
	// A queue_one job's run created ahead may wait behind the active one
	// by design: it is no missed occurrence, and is not counted. (A skip
	// job's may not: skip means an occurrence whose time comes while
	// another run is active does not run, so folding it is right.)
	var behind []int64
	for _, j := range jobs {
		if j.CronExpr != nil && j.NextRunAt != nil && !j.NextRunAt.After(now) && j.Overlap != chronos.OverlapQueueOne {
			behind = append(behind, j.ID)
		}
	}
	stale := map[int64]int{}
	if len(behind) > 0 {
		if err := countStale(ctx, tx, behind, now, stale); err != nil {
			return nil, err
		}
	}
	gaps := map[int64]time.Time{}
	var (
		ids []int64
		ats []time.Time
	)
	none := map[int64]bool{}
	for _, j := range jobs {
		at := gapOf(j, now, stale[j.ID])
		if at.IsZero() {
			continue
		}
		gaps[j.ID] = at
		switch j.Misfire {
		case chronos.MisfireAll:
			res.allGaps = append(res.allGaps, j.ID)
			continue
		case chronos.MisfireNone:
			none[j.ID] = true
			at = now.Add(time.Microsecond) // every run due by now
		default:
			if res.oneGaps == nil {
				res.oneGaps = map[int64]bool{}
			}
			res.oneGaps[j.ID] = true
		}
		ids = append(ids, j.ID)
		ats = append(ats, at)
	}
	if len(ids) == 0 {
		return gaps, nil // none, or misfire "all" only: nothing to fold
	}
	// The fold: a queue_one job's waiting run keeps its place.
	rows, err := tx.Query(ctx, `
		DELETE FROM job_runs r USING unnest($1::bigint[], $2::timestamptz[]) AS g(job_id, at), jobs j
		 WHERE r.job_id = g.job_id AND r.trigger = 'schedule' AND r.status = 'pending'
		   AND r.attempt_count = 0 AND r.scheduled_at < g.at AND `+notOvertakenSQL+`
		   AND j.id = g.job_id AND j.overlap <> 'queue_one'
		RETURNING r.job_id`, ids, ats)
	if err != nil {
		return nil, mapErr(err, "materialize: fold runs into catch-ups")
	}
	folded := map[int64]int{}
	var id int64
	if _, err := pgx.ForEachRow(rows, []any{&id}, func() error { folded[id]++; return nil }); err != nil {
		return nil, mapErr(err, "materialize: fold runs into catch-ups")
	}
	for _, id := range ids {
		if none[id] {
			res.miss(id, chronos.SkipMisfire, folded[id])
		}
	}
	res.folded = folded
	return gaps, nil
}

// notOvertakenSQL is whether the pending scheduled run r may belong to a
// gap: no later scheduled run of its job has been attempted. A run that a
// later one overtook (its limit or its host held it while the later one
// found room) was not left behind by the gap: the cluster was delivering
// the job past it. It is a backlog, which waits for room, and neither a
// fold nor gap detection counts it.
const notOvertakenSQL = `NOT EXISTS (
		SELECT 1 FROM job_runs d
		 WHERE d.job_id = r.job_id AND d.trigger = 'schedule' AND d.scheduled_at > r.scheduled_at
		   AND d.attempt_count > 0)`

// countStale counts, per job, the runs created ahead that are due and have
// not started, and that no later run of the job overtook (notOvertakenSQL).
func countStale(ctx context.Context, tx pgx.Tx, jobs []int64, now time.Time, stale map[int64]int) error {
	rows, err := tx.Query(ctx, `
		SELECT r.job_id, count(*) FROM job_runs r
		 WHERE r.job_id = ANY($1) AND r.trigger = 'schedule' AND r.status = 'pending'
		   AND r.attempt_count = 0 AND r.scheduled_at <= $2 AND `+notOvertakenSQL+`
		 GROUP BY r.job_id`, jobs, now)
	if err != nil {
		return mapErr(err, "materialize: runs of jobs behind")
	}
	var (
		id int64
		n  int
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &n}, func() error { stale[id] = n; return nil })
	return mapErr(err, "materialize: runs of jobs behind")
}

// expiredSQL marks missed up to $2 pending scheduled runs, never
// attempted, of jobs with a starting deadline, that were not claimed
// within it (measured from available_at, the jittered instant; the claim
// refuses them already, see claimSQL). The planner starts from whichever
// is smaller: the jobs with a deadline (jobs_deadline_idx; none, usually)
// or the runs due for over a second (the claimable index: a backlog). A
// held run (migration 016) is left until it is promoted, when its turn
// comes: the claim refuses it then, and the next tick marks it.
const expiredSQL = `
	UPDATE job_runs r
	   SET status = 'missed', finished_at = $1, last_error = 'missed: not started within starting_deadline_seconds'
	  FROM (SELECT r.id FROM job_runs r JOIN jobs j ON j.id = r.job_id
	         WHERE r.status = 'pending' AND NOT r.held AND r.available_at < $1::timestamptz - interval '1 second'
	           AND r.trigger = 'schedule' AND r.attempt_count = 0 AND j.starting_deadline_seconds IS NOT NULL
	           AND r.available_at + j.starting_deadline_seconds * interval '1 second' < $1
	         LIMIT $2
	           FOR UPDATE OF r SKIP LOCKED) x
	 WHERE r.id = x.id
	RETURNING r.job_id`

// expireMissed marks missed the runs whose starting deadline passed.
func expireMissed(ctx context.Context, tx pgx.Tx, now time.Time, batch int, res *MaterializeResult) error {
	rows, err := tx.Query(ctx, expiredSQL, now, batch)
	if err != nil {
		return mapErr(err, "materialize: mark missed runs")
	}
	var id int64
	_, err = pgx.ForEachRow(rows, []any{&id}, func() error { res.miss(id, chronos.SkipDeadline, 1); return nil })
	return mapErr(err, "materialize: mark missed runs")
}

// overlapState reads, for the jobs whose policy cares, whether each has an
// active (pending, leased, running) run and whether it has a pending one.
func overlapState(ctx context.Context, tx pgx.Tx, jobs []*chronos.Job) (active, pending map[int64]bool, err error) {
	var ids []int64
	for _, j := range jobs {
		if j.Overlap != chronos.OverlapAllow {
			ids = append(ids, j.ID)
		}
	}
	active, pending = map[int64]bool{}, map[int64]bool{}
	if len(ids) == 0 {
		return active, pending, nil
	}
	rows, err := tx.Query(ctx, `
		SELECT job_id, bool_or(status = 'pending') FROM job_runs
		 WHERE job_id = ANY($1) AND status IN ('pending', 'leased', 'running')
		 GROUP BY job_id`, ids)
	if err != nil {
		return nil, nil, mapErr(err, "materialize: overlap state")
	}
	var (
		id int64
		p  bool
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &p}, func() error {
		active[id], pending[id] = true, p
		return nil
	})
	if err != nil {
		return nil, nil, mapErr(err, "materialize: overlap state")
	}
	return active, pending, nil
}

// reschedule gives enabled cron jobs without a next_run_at (edited by
// hand, say) their next occurrence after now, so none is stuck outside
// the materializer's index. A schedule with no further occurrence stays
// null. These jobs are not counted as examined: they produce no run in
// this call, and counting them could keep a caller looping.
func reschedule(ctx context.Context, tx pgx.Tx, now time.Time, batch int) error {
	rows, err := tx.Query(ctx, `
		SELECT `+scheduleColumns+` FROM job_schedules s JOIN jobs j ON j.id = s.job_id
		 WHERE s.enabled AND s.cron AND s.next_run_at IS NULL AND j.cron_expr IS NOT NULL AND j.ends_at IS NULL
		 ORDER BY s.job_id LIMIT $1
		   FOR UPDATE OF s SKIP LOCKED`, batch)
	jobs, err := collect(rows, err, "materialize: select unscheduled jobs", scanSchedule)
	if err != nil {
		return err
	}
	if err := attachCalendars(ctx, tx, jobs, nil); err != nil {
		return err
	}
	var (
		ids   []int64
		nexts []time.Time
	)
	for _, j := range jobs {
		if next, err := j.NextRun(now); err == nil && next != nil {
			ids = append(ids, j.ID)
			nexts = append(nexts, *next)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	_, err = tx.Exec(ctx, `
		UPDATE job_schedules s SET next_run_at = v.next
		  FROM unnest($1::bigint[], $2::timestamptz[]) AS v(id, next)
		 WHERE s.job_id = v.id`, ids, nexts)
	return mapErr(err, "materialize: reschedule jobs")
}
