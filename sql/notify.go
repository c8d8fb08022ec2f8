package sql

import (
	"context"
	"log/slog"
	"strconv"
)

// notifyCreated announces a created job on chronos_jobs, after the
// transaction that created it has committed.
//
// The notification is a statement of its own, not a trigger in the
// creating transaction: that transaction would hold the cluster's notify
// lock across its commit's WAL flush, and every other creating
// transaction would wait for it, so creates would commit one flush at a
// time. This statement assigns no transaction id and writes no WAL, so it
// holds the lock for microseconds.
//
// Losing it (the process dies between the two statements, or the database
// refuses it) costs a moment, not the job: the materializer finds new jobs
// on its next tick anyway. So a failure is logged, not returned; the job
// exists and the caller must hear so.
func (db *DB) notifyCreated(ctx context.Context, jobID int64) {
	payload := `{"op":"created","job_id":` + strconv.FormatInt(jobID, 10) + `}`
	if _, err := db.Pool.Exec(context.WithoutCancel(ctx), "SELECT pg_notify('chronos_jobs', $1)", payload); err != nil {
		slog.Default().Warn("notify created job", "job_id", jobID, "err", err)
	}
}
