package sql

import (
	"context"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/jackc/pgx/v5"
)

// The read-only queries of the web console (package ui). Each is bounded
// by an index, so a page costs the same with a million jobs as with ten:
// per-job lookups go through job_runs_job_idx, active runs through the
// partial indexes on pending and leased runs, finished runs through
// job_runs_prunable_idx (finished_at of succeeded and dead runs).

// RecentRuns returns the newest n runs (n capped at 50) of each job in
// jobIDs, newest first: the last outcome and the strip of recent outcomes
// of the console's job list. A job without runs is absent from the map.
func (db *DB) RecentRuns(ctx context.Context, jobIDs []int64, n int) (map[int64][]*chronos.Run, error) {
	out := map[int64][]*chronos.Run{}
	if len(jobIDs) == 0 {
		return out, nil
	}
	n = min(max(n, 1), 50)
	rows, err := db.Pool.Query(ctx, `
		SELECT `+qualified("r", runColumns)+`
		  FROM unnest($1::bigint[]) AS j(id)
		 CROSS JOIN LATERAL (
		       SELECT * FROM job_runs WHERE job_id = j.id ORDER BY id DESC LIMIT $2) r
		 ORDER BY r.job_id, r.id DESC`, jobIDs, n)
	runs, err := collect(rows, err, "recent runs", scanRun)
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		out[r.JobID] = append(out[r.JobID], r)
	}
	return out, nil
}

// Overview is the console's summary of the cluster now, from the database,
// so every instance shows the same. What finished lately is FinishedBetween's.
type Overview struct {
	// Now is the database's clock when the overview was read.
	Now time.Time
	// Active counts the pending, leased and running runs.
	Active map[chronos.RunStatus]int64
	// OldestPending is the run that has been waiting longest for a worker
	// (available the earliest), if any is pending and due.
	OldestPending *chronos.Run
	// Leader names the instance holding the leadership lock ("" when none).
	Leader string
	// Instances are the instances whose listener is connected to the
	// database: those alive as far as it knows.
	Instances []string
	// Versions are the instances' registered versions (migration 017), by
	// name; an instance that registered none is missing.
	Versions map[string]string
}

// Overview reads the console's overview in one round trip (and the
// leader's in another): the clock, the active runs, each status through
// its partial index, the oldest due pending run, and the instances.
func (db *DB) Overview(ctx context.Context) (*Overview, error) {
	o := &Overview{Active: map[chronos.RunStatus]int64{}}
	b := &pgx.Batch{}
	b.Queue(`SELECT now()`)
	b.Queue(`SELECT 'pending', (SELECT count(*) FROM job_runs WHERE status = 'pending' AND NOT held)
	                         + (SELECT count(*) FROM job_runs WHERE held AND status = 'pending')
	         UNION ALL
	         SELECT status::text, count(*) FROM job_runs WHERE status IN ('leased', 'running') GROUP BY status`)
	// Pending runs are in one of two partial indexes (claimable or held,
	// migration 016): the oldest due is the first of either.
	b.Queue(`SELECT ` + runColumns + ` FROM (
	           (SELECT * FROM job_runs WHERE status = 'pending' AND NOT held AND available_at <= now()
	             ORDER BY available_at, id LIMIT 1)
	           UNION ALL
	           (SELECT * FROM job_runs WHERE held AND status = 'pending' AND available_at <= now()
	             ORDER BY available_at, id LIMIT 1)) r
	          ORDER BY available_at, id LIMIT 1`)
	// Every chronos serve holds one LISTEN connection, named
	// <instance>-listener (package listeners): those name the instances,
	// and other clients of the database (psql, adminer) are left out.
	b.Queue(`SELECT l.instance, COALESCE(i.version, '')
	           FROM (SELECT DISTINCT left(application_name, -length('-listener')) AS instance FROM pg_stat_activity
	                  WHERE datname = current_database() AND application_name LIKE '%-listener') l
	           LEFT JOIN chronos_instances i USING (instance)
	          ORDER BY 1`)
	br := db.Pool.SendBatch(ctx, b)
	defer br.Close()
	if err := br.QueryRow().Scan(&o.Now); err != nil {
		return nil, mapErr(err, "overview: clock")
	}
	o.Now = o.Now.UTC()
	var (
		st string
		n  int64
	)
	rows, err := br.Query()
	if err := eachRow(rows, err, "overview: active runs", []any{&st, &n}, func() { o.Active[chronos.RunStatus(st)] = n }); err != nil {
		return nil, err
	}
	r, err := scanRun(br.QueryRow())
	switch {
	case err == nil:
		o.OldestPending = r
	case err != pgx.ErrNoRows:
		return nil, mapErr(err, "overview: oldest pending run")
	}
	o.Versions = map[string]string{}
	var name, version string
	rows, err = br.Query()
	if err := eachRow(rows, err, "overview: instances", []any{&name, &version}, func() {
		o.Instances = append(o.Instances, name)
		if version != "" {
			o.Versions[name] = version
		}
	}); err != nil {
		return nil, err
	}
	if err := br.Close(); err != nil {
		return nil, mapErr(err, "overview")
	}
	if o.Leader, err = db.Leader(ctx); err != nil {
		return nil, err
	}
	return o, nil
}
