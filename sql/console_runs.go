package sql

import (
	"context"

	"github.com/chronoshq/chronos"
	"github.com/jackc/pgx/v5"
)

// RunNotes is what the console's run list (the dead letters) shows beside
// a page of runs that AllRuns returned: each job's name, and each run's
// newest redrive.
type RunNotes struct {
	// JobNames maps the id of each job that still exists to its name.
	JobNames map[int64]string
	// Redrives maps the id of each run that was redriven to its newest
	// redrive's id and status.
	Redrives map[int64]RedriveRef
}

// RedriveRef is a run's newest redrive.
type RedriveRef struct {
	ID     int64
	Status chronos.RunStatus
}

// Notes reads the RunNotes of runs in one round trip: the names by primary
// key, the redrives through job_runs_redrive_of_idx, so a page costs the
// same with ten million runs as with ten.
func (db *DB) Notes(ctx context.Context, runs []*chronos.Run) (*RunNotes, error) {
	n := &RunNotes{JobNames: map[int64]string{}, Redrives: map[int64]RedriveRef{}}
	if len(runs) == 0 {
		return n, nil
	}
	runIDs := make([]int64, len(runs))
	seen := map[int64]bool{}
	var jobIDs []int64
	for i, r := range runs {
		runIDs[i] = r.ID
		if !seen[r.JobID] {
			seen[r.JobID] = true
			jobIDs = append(jobIDs, r.JobID)
		}
	}
	b := &pgx.Batch{}
	b.Queue(`SELECT id, name FROM jobs WHERE id = ANY($1::bigint[])`, jobIDs)
	b.Queue(`SELECT DISTINCT ON (redrive_of) redrive_of, id, status FROM job_runs
	          WHERE redrive_of = ANY($1::bigint[]) ORDER BY redrive_of, id DESC`, runIDs)
	br := db.Pool.SendBatch(ctx, b)
	defer br.Close()
	var (
		id, of int64
		name   string
		ref    RedriveRef
	)
	rows, err := br.Query()
	if err := eachRow(rows, err, "run notes: job names", []any{&id, &name}, func() { n.JobNames[id] = name }); err != nil {
		return nil, err
	}
	rows, err = br.Query()
	if err := eachRow(rows, err, "run notes: redrives", []any{&of, &ref.ID, &ref.Status}, func() { n.Redrives[of] = ref }); err != nil {
		return nil, err
	}
	if err := br.Close(); err != nil {
		return nil, mapErr(err, "run notes")
	}
	return n, nil
}
