package sql

import (
	"context"
)

// Redrives returns up to limit redrives of a run (the runs whose
// redrive_of is runID), newest first, through job_runs_redrive_of_idx:
// the console's run page links a dead run to them.
func (db *DB) Redrives(ctx context.Context, runID int64, limit int) ([]RedriveRef, error) {
	rows, err := db.Pool.Query(ctx, `SELECT id, status FROM job_runs WHERE redrive_of = $1 ORDER BY id DESC LIMIT $2`, runID, limit)
	if err != nil {
		return nil, mapErr(err, "redrives of a run")
	}
	defer rows.Close()
	out := []RedriveRef{}
	for rows.Next() {
		var r RedriveRef
		if err := rows.Scan(&r.ID, &r.Status); err != nil {
			return nil, mapErr(err, "redrives of a run")
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err, "redrives of a run")
	}
	return out, nil
}
