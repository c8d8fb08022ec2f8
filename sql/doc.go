// Package sql is Chronos's Postgres layer: the embedded migrations (tables,
// indexes, NOTIFY triggers), every query, and the run state machine as SQL.
//
// Each state-machine operation is one statement or one short transaction.
// Every write a worker makes is fenced on (run id, leased_by, attempt_count):
// a worker whose lease was reclaimed gets ErrLeaseLost and changes nothing.
//
// NOTIFY channels and payloads (decoded by package listeners):
//
//	chronos_jobs    {"op":"created|updated|deleted","job_id":N}           row-level, user-visible columns only;
//	                "created" is sent by CreateJob after its commit (see notifyCreated),
//	                with "next_run_at":"ts" when the new job has one
//	chronos_runs    {"count":N,"run_id":N?,"job_id":N?,"status":"s"?,"available_at":"ts"?}
//	                statement-level over a transition table: run_id/job_id/status
//	                only when one value covers every row; available_at is the
//	                earliest among the rows left pending. Only statements that
//	                leave rows pending, succeeded or dead notify (claims do not).
//	chronos_leader  {"op":"resigned","instance":"id"}
//
// count counts the rows a statement left pending, succeeded or dead (not
// the leased or running ones). available_at is Postgres's JSON form of a
// timestamptz, e.g. "2026-12-02T14:00:00.123456+00:00" (RFC 3339).
//
// # Decisions
//
// Attempts. max_retries is the number of retries after the first attempt:
// a run is attempted at most max_retries+1 times. Claim counts the attempt
// (attempt_count+1); a failure with attempt_count >= max_retries+1, and a
// reclaim of such a run, dead-letters it. The budget is read from the job
// at completion time, so lowering max_retries applies to runs in flight.
// Every counted attempt has exactly one record, a row of the view
// run_attempts_all: a first attempt that succeeded before Start ran is
// kept on the run itself (its first_attempt_* columns), every other one is
// a run_attempts row. Start (StartMany, for a batch of workers) creates
// the row, Complete finishes it (or creates it when Start was skipped),
// Reclaim finishes it (or creates it for a run that was leased but never
// started) with the error "lease expired". Release (graceful shutdown) undoes the
// attempt entirely: attempt_count goes back down and the row is deleted.
// The run's last_error and last_status_code describe the latest attempt
// (a success clears last_error). Complete stores error texts of up to
// 2 KiB and response bodies of up to MaxBodyBytes, made valid UTF-8
// without NUL bytes (Postgres text accepts neither).
//
// Retry timing. Complete uses the worker's RetryDelay (the worker knows
// the job's backoff and any Retry-After). A reclaimed run is available at
// once: the expired lease already delayed it by a lease's length.
//
// Reclaim. Candidates are leased/running runs with leased_until < now(),
// locked FOR UPDATE SKIP LOCKED; the UPDATE repeats the comparison, so the
// expiry is checked at update time. Renew extends a lease that has passed
// but not yet been reclaimed: the fence is identity, not time.
//
// Schedules. A job's scheduling state lives in its narrow row of
// job_schedules (migration 018), not in the wide jobs row: job_id,
// next_run_at (the next occurrence not yet materialized), copies of
// enabled and of "is a cron job" (the predicates of its indexes), and
// catch_up_at (misfire "all", below). Firing a cron job updates that row
// only; jobs (nine indexes, three GIN) is written only when the API
// changes a job. Who writes it: a statement-level trigger on jobs INSERT
// (over the transition table, so a multi-row insert is one statement)
// creates the rows; a writer may set next_run_at in the same statement
// (CreateJob does, in a CTE), and a writer of the old shape that still sets
// jobs.next_run_at has it moved over and jobs.next_run_at cleared. A row
// trigger copies enabled and the kind of schedule when they change; a
// statement trigger on jobs DELETE deletes the rows of the jobs removed,
// where a foreign key's cascade did until migration 038 (the key's check
// locked each new job's row again: a tenth of a batch create's Postgres
// time with the labels' copy); UpdateJob writes next_run_at; the
// materializer writes next_run_at and catch_up_at. jobs.next_run_at is
// kept (expand, then contract) but always null, so an older binary's claim
// never holds runs back on it, and a trigger refuses an older binary's
// materializer ("this database is migrated for a newer chronos; upgrade
// this instance"). Job responses read next_run_at from the schedule row.
//
// Calendars (migration 024). calendars holds named sets of dates;
// job_calendars the calendars each cron job names, with its policy, so
// foreign keys keep the references (a calendar in use cannot be deleted).
// Every read that builds a job's schedule attaches them (calendars_jobs.go);
// a change of a calendar's dates re-plans its jobs' runs created ahead as a
// PATCH of the schedule does (calendars.go). Backfill (backfill.go) creates
// runs with trigger 'backfill'; the unique index covers scheduled runs only,
// so a backfill checks for an existing run of each occurrence under the
// job's schedule row, locked as the materializer locks it.
//
// Materialize. It locks due schedule rows FOR UPDATE SKIP LOCKED (and
// their jobs FOR KEY SHARE, so a delete waits rather than deadlocks), so
// two materializers take disjoint jobs, and inserts with ON CONFLICT DO
// NOTHING on UNIQUE (job_id, scheduled_at) WHERE trigger = 'schedule', so
// even a stale repeat creates nothing twice. Gaps are detected on the
// schedule row alone: a job is behind when its next_run_at is not after
// now (the materializer keeps it a lookahead ahead while a leader runs),
// and it has a gap when more than one occurrence is due, counting its runs
// created ahead that never started. A cron job whose window has ended has
// no next_run_at: it is behind once no pass vouches for the present
// (chronos_materializer, materialize_ended.go). A gap gets one run flagged catch_up,
// for the latest missed occurrence, then resumes at the first occurrence
// after now: never a flood (misfire "one"; "none" creates nothing, "all"
// one run per missed occurrence). Under "all" the runs created before the
// gap are flagged too, and the catch-ups run one after another in order:
// catch_up_at names the one that may run, the claim holds back the later
// ones, and each call moves it on once that run has finished. Within the
// lookahead, allow-jobs get their runs pre-created (available_at = the
// jittered instant, so dispatchers can arm a timer and claim them a moment
// ahead); skip and queue_one jobs too while they have no run pending,
// leased or running (a herd of them at the top of the hour is prepared
// ahead like any other); while they have one, a future occurrence is
// decided when it is due, since the active run may be finished by then,
// and such a job is not even selected, so "call again while the batch is
// full" always ends. A one-shot (run_at) materializes once and its
// next_run_at becomes null; a cron job whose schedule has no further
// occurrence likewise. An enabled cron job found with a null next_run_at
// is given its next occurrence after now.
//
// Job changes. CreateJob applies the defaults and validates before it
// writes, so a constraint never produces a 500; the CHECK constraints back
// the validation up and map to EINVALID naming the field. next_run_at is
// computed for disabled jobs too. UpdateJob recomputes next_run_at from now
// when the schedule changes or the job is re-enabled (time spent disabled
// is not caught up; a one-shot already materialized stays done), and then,
// or when the job is disabled, deletes the pending, never-attempted runs
// pre-created for its future occurrences, except, for an edit of an
// enabled cron job, those whose occurrence the new plan still contains
// (a jittered run whose instant has passed but whose fire time has not
// among them): an edit never loses an occurrence of the new plan, and the
// schedule goes on from the new plan's next occurrence (the unique key
// skips the kept ones), or from a jittered occurrence of it still to fire
// that no run stands for yet (the job behind). With them go the runs
// claimed ahead of their instant that no worker has started yet
// (StartAhead fences the start against it), judged by the clock as the
// run is read, so that a run its claim handed out as due is never
// deleted under its worker. Manual triggers ignore enabled
// and overlap: "run it now" is explicit. Redrive is refused (ECONFLICT)
// while an earlier redrive of the same run is still active.
//
// Lists. Cursors are opaque: base64url of "c1:<last id>". Jobs go in id
// order (WHERE id > cursor), runs newest first (WHERE id < cursor); both
// fetch limit+1 rows, so the last page has no next cursor. limit <= 0 is
// the default 50; more than 500 is 500.
//
// Payloads are stored as json, not jsonb: the webhook body is the user's
// bytes exactly.
//
// Search. job_labels and job_search (migration 011) are copies of the
// jobs' labels, names and lower-cased descriptions, kept by triggers on
// jobs, so that a filtered page of GET /v1/jobs is found in id order
// without sorting every match (jobsearch.go). They change nothing a
// search returns: TestSearchMatchesThePlainFilters holds them to the
// plain filters on jobs.
//
// Dead-run alerts. A trigger on job_runs writes a run's alerts into
// dead_alerts in the statement that makes it dead, whichever statement
// that is (migration 010). Claims (ClaimAlerts) lease rows by moving
// available_at, count the attempt, and fence every later write on (id,
// leased_by, attempts), like runs.
//
// Overlap lock. A skip/queue_one job's one active run holds its
// job_run_locks row, taken by the claim (ON CONFLICT DO NOTHING) and given
// up by triggers on job_runs in whatever statement ends or deletes the
// run (migration 016); runs waiting behind it are held out of the claim's
// index and promoted one at a time. SweepRunLocks (the leader's lock
// check) repairs and counts what should never happen. See runlock.go.
//
// Partitions (migrations 019, 020; partitions.go). job_runs is
// partitioned by RANGE (scheduled_at), run_attempts by RANGE (run_id),
// plain declarative partitioning (no extension). History is dropped a
// partition at a time; nothing deletes runs row by row except in the
// default partition.
//
//   - Why scheduled_at: a unique index of a partitioned table must contain
//     the key, and one run per occurrence is UNIQUE (job_id, scheduled_at)
//     WHERE trigger = 'schedule'. The primary key is (id, scheduled_at);
//     the active-redrive key is (redrive_of, scheduled_at), the same rule
//     since a redrive copies its run's scheduled_at. A lookup by id alone
//     probes each partition's primary key index, so partitions are wide
//     enough to stay few: RunPartitionWidth(RUN_RETENTION) is a day for
//     the default 7 days (about nine live partitions), down to a minute
//     for retentions of minutes.
//   - Why run_id for attempts: ids come from one identity and grow, so the
//     attempts partition [a, b) may go once the identity has passed b and
//     no run with an id in [a, b) is left. Attempts live as long as their
//     runs, stragglers included, and the statements that write attempts
//     are unchanged (their key (run_id, attempt) contains run_id). Attempt
//     ranges are as wide as the ids one runs partition took.
//   - No foreign key references job_runs (there is no unique id to
//     reference, and a reference would forbid dropping partitions):
//     run_attempts.run_id lost its; redrive_of, job_run_locks and
//     dead_alerts never had one. job_runs.job_id keeps its ON DELETE
//     CASCADE: deleting a job deletes its runs; their attempts stay until
//     their partition goes, shown by no query.
//   - The NOTIFY triggers are statement-level on the parent, with
//     transition tables, and fire for rows routed to any partition; the
//     dead-alert row trigger is cloned onto every partition.
//   - Default partitions take what no range holds: a run scheduled before
//     the oldest partition or after the newest (a one-shot years away),
//     so no insert ever fails for want of a partition. Its rows are never
//     moved (a worker's fenced write blocked behind a move would find its
//     row gone and take its lease for lost): a range created later is
//     split around them, one partition before the first and one
//     (<name>_after) after the last. Finished runs in the default partition are
//     deleted once finished more than RUN_RETENTION ago.
//   - Upkeep (the leader's pruner, every PRUNE_INTERVAL and at start):
//     EnsureRunPartitions creates job_runs partitions a width and two
//     ticks ahead and one range of run ids ahead for attempts;
//     PruneRunPartitions drops a job_runs partition once its whole range
//     lies RUN_RETENTION in the past and it holds no pending, leased or
//     running run. A partition with such a straggler (a retry due far
//     ahead, a run held behind another) is kept whole, terminal runs
//     included, until the straggler finishes: its rows cannot move, since
//     a run's partition follows from scheduled_at, which never changes.
//     A run is thus kept from RUN_RETENTION to RUN_RETENTION + one width
//     after its scheduled instant (not its finish, as before).
//   - Locks: creating a partition takes SHARE ROW EXCLUSIVE on the parent
//     (reads go on, writes wait; an insert routed to the default partition
//     under the old bounds would fail once the range exists) and ACCESS
//     EXCLUSIVE on the default partition, for milliseconds: the default
//     partition holds only strays. Dropping takes ACCESS EXCLUSIVE on
//     the parent for the check and the DROP (milliseconds). The parent
//     waits at most PartitionLockTimeout (100 ms); the partition is taken
//     NOWAIT, never waited for while the parent is held (a statement that
//     read job_runs and then writes it would close a cycle). Both are
//     asked for in one DO block that catches a refusal, which lets go of
//     the parent in the same statement and leaves no ERROR in the
//     server's log (lockPartition); the upkeep tries again after a pause
//     and at the next tick, so it delays a claim by 100 ms at worst. (DETACH
//     PARTITION CONCURRENTLY would avoid the parent lock, but Postgres
//     refuses it while a default partition exists.)
//   - Statistics: the leader analyzes a partition whose live rows grew
//     or shrank by more than max(5,000, a fifth) since its last analyze,
//     and job_schedules once that many of its rows changed
//     (AnalyzeChangedTables); a partition at most every 30 s unless its
//     count jumped fourfold: a burst is analyzed as soon as it is seen; a
//     partition filling at 5,000 runs/s is not analyzed a dozen times a
//     minute.
//   - The upgrade (019, 020) runs online: the existing tables become the
//     partitions job_runs_legacy [MINVALUE, bound) and
//     run_attempts_legacy, attached after a bounding CHECK was added NOT
//     VALID and validated and the unique indexes the parents need were
//     built CONCURRENTLY, so the swap changes the catalog only. Measured
//     with TestPartitionMigration (2,000,000 runs, a worker claiming and
//     completing throughout, 2 cores at load ~40): the migration took 27 s;
//     the swap held ACCESS EXCLUSIVE for 318 ms (its NOTICE; 329 ms by
//     pg_locks sampling), independent of the row count; of 11,748
//     workload statements 20 took over 100 ms, the longest (a claim)
//     520 ms. The legacy
//     partition is dropped whole like any other once past the retention.
//
// Leadership. One session advisory lock (key "chronos"), per database, on
// a dedicated pgx.Conn. TryLock does not stack the lock when already held,
// so one Unlock always lets go. Leader names the holder through pg_locks
// and pg_stat_activity.application_name.
//
// Pool. Open sizes the pool at max(8, 2×CPUs) connections, idle ones
// closed after a minute, unless the DSN sets pool_max_conns /
// pool_max_conn_idle_time.
package sql
