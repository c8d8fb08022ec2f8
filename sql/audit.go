package sql

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/jackc/pgx/v5"
)

// changesArg is the changes column of an audit entry.
func changesArg(c map[string]chronos.FieldChange) string {
	if c == nil {
		return "{}"
	}
	b, err := json.Marshal(c)
	if err != nil {
		return "{}" // RawMessages from json.Marshal always marshal
	}
	return string(b)
}

// auditAction names a PATCH: pause or resume when enabled is all it
// changed, else update.
func auditAction(changes map[string]chronos.FieldChange) chronos.AuditAction {
	if c, ok := changes["enabled"]; ok && len(changes) == 1 {
		if string(c.After) == "false" {
			return chronos.AuditPause
		}
		return chronos.AuditResume
	}
	return chronos.AuditUpdate
}

// recordAudit adds an entry to a job's history within tx.
func recordAudit(ctx context.Context, tx pgx.Tx, jobID int64, action chronos.AuditAction, runID *int64, changes map[string]chronos.FieldChange) error {
	_, err := tx.Exec(ctx, `INSERT INTO job_audit (job_id, action, actor, run_id, changes) VALUES ($1, $2, $3, $4, $5::jsonb)`,
		jobID, string(action), chronos.ActorFrom(ctx), runID, changesArg(changes))
	if err != nil {
		return mapErr(err, "record audit")
	}
	return nil
}

// History returns a page of a job's audit history, newest first, and the
// next cursor. It outlives the job; ENOTFOUND only when the job never had
// any (or it was all pruned and the job is gone).
func (db *DB) History(ctx context.Context, jobID int64, cursor string, limit int) ([]chronos.AuditEntry, string, error) {
	before, err := decodeCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	limit = pageLimit(limit)
	args := []any{jobID, limit + 1}
	// A creation entry's fields are in creation (json) since migration
	// 039, in changes before it.
	q := "SELECT id, job_id, action, actor, at, run_id, COALESCE(creation::jsonb, changes) FROM job_audit WHERE job_id = $1"
	if before > 0 {
		args = append(args, before)
		q += fmt.Sprintf(" AND id < $%d", len(args))
	}
	rows, err := db.Pool.Query(ctx, q+" ORDER BY id DESC LIMIT $2", args...)
	if err != nil {
		return nil, "", mapErr(err, "job history")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (chronos.AuditEntry, error) {
		var e chronos.AuditEntry
		err := r.Scan(&e.ID, &e.JobID, &e.Action, &e.Actor, &e.At, &e.RunID, &e.Changes)
		e.At = e.At.UTC()
		if e.Changes == nil {
			e.Changes = map[string]chronos.FieldChange{}
		}
		return e, err
	})
	if err != nil {
		return nil, "", mapErr(err, "job history")
	}
	if len(out) == 0 && before == 0 {
		if _, err := db.Job(ctx, jobID); err != nil {
			return nil, "", err
		}
	}
	out, next := cutPage(out, limit, func(e chronos.AuditEntry) int64 { return e.ID })
	return out, next, nil
}

// PruneAudit deletes up to batch audit entries older than retention by
// the database's clock, oldest first, and returns how many it deleted.
func (db *DB) PruneAudit(ctx context.Context, retention time.Duration, batch int) (int, error) {
	if batch <= 0 {
		return 0, nil
	}
	tag, err := db.Pool.Exec(ctx, `
		DELETE FROM job_audit WHERE id IN (
			SELECT id FROM job_audit WHERE at < now() - $1::bigint * interval '1 microsecond'
			 ORDER BY at LIMIT $2)`, micros(retention), batch)
	if err != nil {
		return 0, mapErr(err, "prune audit history")
	}
	return int(tag.RowsAffected()), nil
}
