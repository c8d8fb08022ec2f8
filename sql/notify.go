package sql

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/chronoshq/chronos"
)

// notifyCreated announces created jobs on chronos_jobs, one notification
// each, in one statement, after the transaction that created them has
// committed.
//
// The notification is a statement of its own, not a trigger in the
// creating transaction: that transaction would hold the cluster's notify
// lock across its commit's WAL flush, and every other creating
// transaction would wait for it, so creates would commit one flush at a
// time. This statement assigns no transaction id and writes no WAL, so it
// holds the lock for microseconds.
//
// Each payload carries the job's next_run_at when it has one: the
// materializer wakes for a new job only when its first run is near (see
// reactor's materializer), so a stream of creates of jobs due later does
// not make it tick once per create.
//
// Losing it (the process dies between the two statements, or the database
// refuses it) costs a moment, not the job: the materializer finds new jobs
// on its next tick anyway. So a failure is logged, not returned; the jobs
// exist and the callers must hear so.
func (db *DB) notifyCreated(ctx context.Context, jobs ...*chronos.Job) {
	payloads := make([]string, 0, len(jobs))
	for _, j := range jobs {
		if j.ID != 0 {
			payloads = append(payloads, createdPayload(j))
		}
	}
	var err error
	switch len(payloads) {
	case 0:
		return
	case 1:
		_, err = db.Pool.Exec(context.WithoutCancel(ctx), "SELECT pg_notify('chronos_jobs', $1)", payloads[0])
	default:
		_, err = db.Pool.Exec(context.WithoutCancel(ctx),
			"SELECT pg_notify('chronos_jobs', p) FROM unnest($1::text[]) p", payloads)
	}
	if err != nil {
		slog.Default().Warn("notify created jobs", "jobs", len(payloads), "err", err)
	}
}

// createdPayload is the chronos_jobs payload of a created job (sql/doc.go).
func createdPayload(j *chronos.Job) string {
	b := make([]byte, 0, 96)
	b = append(b, `{"op":"created","job_id":`...)
	b = strconv.AppendInt(b, j.ID, 10)
	if j.NextRunAt != nil {
		b = append(b, `,"next_run_at":"`...)
		b = j.NextRunAt.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	return string(append(b, '}'))
}
