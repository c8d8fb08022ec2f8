// Package sql is Chronos's Postgres layer: the embedded migrations (tables,
// indexes, NOTIFY triggers), every query, and the run state machine as SQL.
//
// Each state-machine operation is one statement or one short transaction.
// Every write a worker makes is fenced on (run id, leased_by, attempt_count):
// a worker whose lease was reclaimed gets ErrLeaseLost and changes nothing.
//
// NOTIFY channels and payloads (decoded by package listeners):
//
//	chronos_jobs    {"op":"created|updated|deleted","job_id":N}           row-level, user-visible columns only
//	chronos_runs    {"count":N,"run_id":N?,"job_id":N?,"status":"s"?,"available_at":"ts"?}
//	                statement-level over a transition table: run_id/job_id/status
//	                only when one value covers every row; available_at is the
//	                earliest among the rows left pending. Only statements that
//	                leave rows pending, succeeded or dead notify (claims do not).
//	chronos_leader  {"op":"resigned","instance":"id"}
package sql
