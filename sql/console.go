package sql

import (
	"cmp"
	"context"
	"sync"
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
	if err != nil {
		return nil, mapErr(err, "recent runs")
	}
	runs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*chronos.Run, error) { return scanRun(r) })
	if err != nil {
		return nil, mapErr(err, "recent runs")
	}
	for _, r := range runs {
		out[r.JobID] = append(out[r.JobID], r)
	}
	return out, nil
}

// Overview is the console's summary of the cluster, from the database, so
// every instance shows the same.
type Overview struct {
	// Now is the database's clock when the overview was read.
	Now time.Time
	// Active counts the pending, leased and running runs.
	Active map[chronos.RunStatus]int64
	// Finished counts the runs that finished (succeeded, dead) in Window.
	Finished map[chronos.RunStatus]int64
	// Window is how far back Finished and PerMinute look.
	Window time.Duration
	// OldestPending is the run that has been waiting longest for a worker
	// (available the earliest), if any is pending and due.
	OldestPending *chronos.Run
	// PerMinute counts finished runs by minute and outcome, oldest minute
	// first, one entry per minute of Window (zeros included).
	PerMinute []MinuteCount
	// LagP50 and LagP99 are the schedule lag (start minus scheduled
	// instant) of the scheduled runs that finished in Window; zero without
	// any.
	LagP50, LagP99 time.Duration
	// Leader names the instance holding the leadership lock ("" when none).
	Leader string
	// Instances are the instances whose listener is connected to the
	// database: those alive as far as it knows.
	Instances []string
}

// MinuteCount is the number of runs that finished in one minute, by outcome.
type MinuteCount struct {
	Minute    time.Time
	Succeeded int64
	Dead      int64
}

// Overview reads the console's overview for the last window (an hour when
// 0, at most a day).
//
// The finished runs of the window are its costly part: every run that
// finished in it is read, through job_runs_prunable_idx, once to count them
// per minute and once for the schedule lag's percentiles. The two run
// concurrently with each other and with the rest (one pooled connection
// each), so the page waits for the slowest, not for the sum; the lag is
// computed in double precision (date_part), not numeric (extract), which
// costs several times more per row.
func (db *DB) Overview(ctx context.Context, window time.Duration) (*Overview, error) {
	if window <= 0 {
		window = time.Hour
	}
	window = min(window, 24*time.Hour).Truncate(time.Minute)
	o := &Overview{Window: window, Active: map[chronos.RunStatus]int64{}, Finished: map[chronos.RunStatus]int64{}}
	var (
		wg                 sync.WaitGroup
		minutes            []MinuteCount
		finished           map[chronos.RunStatus]int64
		minutesErr, lagErr error
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		minutes, finished, minutesErr = db.finishedPerMinute(ctx, window)
	}()
	go func() {
		defer wg.Done()
		o.LagP50, o.LagP99, lagErr = db.scheduleLag(ctx, window)
	}()
	err := db.overviewNow(ctx, o)
	wg.Wait()
	if err = cmp.Or(err, minutesErr, lagErr); err != nil {
		return nil, err
	}
	o.Finished = finished
	// One entry per minute of the window by the clock read with the rest;
	// a minute the finished runs' own clock saw beyond it is left out.
	first := o.Now.Add(-window).Truncate(time.Minute)
	o.PerMinute = make([]MinuteCount, int(window/time.Minute)+1)
	for i := range o.PerMinute {
		o.PerMinute[i].Minute = first.Add(time.Duration(i) * time.Minute)
	}
	for _, m := range minutes {
		if i := int(m.Minute.Sub(first) / time.Minute); i >= 0 && i < len(o.PerMinute) {
			o.PerMinute[i].Succeeded += m.Succeeded
			o.PerMinute[i].Dead += m.Dead
		}
	}
	return o, nil
}

// overviewNow reads the cheap part of the overview into o, in one round
// trip: the clock, the active runs, the oldest pending run, the instances,
// and the leader.
func (db *DB) overviewNow(ctx context.Context, o *Overview) error {
	b := &pgx.Batch{}
	b.Queue(`SELECT now()`)
	b.Queue(`SELECT 'pending', count(*) FROM job_runs WHERE status = 'pending'
	         UNION ALL
	         SELECT status::text, count(*) FROM job_runs WHERE status IN ('leased', 'running') GROUP BY status`)
	b.Queue(`SELECT ` + runColumns + ` FROM job_runs WHERE status = 'pending' AND available_at <= now()
	          ORDER BY available_at, id LIMIT 1`)
	// Every chronos serve holds one LISTEN connection, named
	// <instance>-listener (package listeners): those name the instances,
	// and other clients of the database (psql, adminer) are left out.
	b.Queue(`SELECT DISTINCT left(application_name, -length('-listener')) FROM pg_stat_activity
	          WHERE datname = current_database() AND application_name LIKE '%-listener'
	          ORDER BY 1`)
	br := db.Pool.SendBatch(ctx, b)
	defer br.Close()
	if err := br.QueryRow().Scan(&o.Now); err != nil {
		return mapErr(err, "overview: clock")
	}
	o.Now = o.Now.UTC()
	rows, err := br.Query()
	if err != nil {
		return mapErr(err, "overview: active runs")
	}
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return mapErr(err, "overview: active runs")
		}
		o.Active[chronos.RunStatus(st)] = n
	}
	if err := rows.Err(); err != nil {
		return mapErr(err, "overview: active runs")
	}
	r, err := scanRun(br.QueryRow())
	switch {
	case err == nil:
		o.OldestPending = r
	case err != pgx.ErrNoRows:
		return mapErr(err, "overview: oldest pending run")
	}
	rows, err = br.Query()
	if err != nil {
		return mapErr(err, "overview: instances")
	}
	if o.Instances, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return mapErr(err, "overview: instances")
	}
	if err := br.Close(); err != nil {
		return mapErr(err, "overview")
	}
	if o.Leader, err = db.Leader(ctx); err != nil {
		return err
	}
	return nil
}

// finishedPerMinute counts the runs that finished in the last window by
// minute and outcome, and in all.
func (db *DB) finishedPerMinute(ctx context.Context, window time.Duration) ([]MinuteCount, map[chronos.RunStatus]int64, error) {
	rows, err := db.Pool.Query(ctx, `
		SELECT date_trunc('minute', finished_at) AS m, status::text, count(*)
		  FROM job_runs
		 WHERE status IN ('succeeded', 'dead') AND finished_at > now() - $1 * interval '1 microsecond'
		 GROUP BY m, status ORDER BY m`, micros(window))
	if err != nil {
		return nil, nil, mapErr(err, "overview: finished runs")
	}
	defer rows.Close()
	var out []MinuteCount
	total := map[chronos.RunStatus]int64{}
	for rows.Next() {
		var m time.Time
		var st string
		var n int64
		if err := rows.Scan(&m, &st, &n); err != nil {
			return nil, nil, mapErr(err, "overview: finished runs")
		}
		m = m.UTC()
		if len(out) == 0 || !out[len(out)-1].Minute.Equal(m) {
			out = append(out, MinuteCount{Minute: m})
		}
		total[chronos.RunStatus(st)] += n
		if chronos.RunStatus(st) == chronos.StatusSucceeded {
			out[len(out)-1].Succeeded += n
		} else {
			out[len(out)-1].Dead += n
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, mapErr(err, "overview: finished runs")
	}
	return out, total, nil
}

// scheduleLag is the p50 and p99 of the schedule lag (start minus
// scheduled instant) of the scheduled runs that finished in the last
// window; zero without any.
func (db *DB) scheduleLag(ctx context.Context, window time.Duration) (p50, p99 time.Duration, err error) {
	var q50, q99 float64
	err = db.Pool.QueryRow(ctx, `
		SELECT COALESCE(percentile_cont(0.5) WITHIN GROUP (ORDER BY lag), 0),
		       COALESCE(percentile_cont(0.99) WITHIN GROUP (ORDER BY lag), 0)
		  FROM (SELECT date_part('epoch', started_at - scheduled_at) AS lag
		          FROM job_runs
		         WHERE status IN ('succeeded', 'dead') AND finished_at > now() - $1 * interval '1 microsecond'
		           AND trigger = 'schedule' AND started_at IS NOT NULL) s`, micros(window)).Scan(&q50, &q99)
	if err != nil {
		return 0, 0, mapErr(err, "overview: schedule lag")
	}
	return time.Duration(q50 * float64(time.Second)), time.Duration(q99 * float64(time.Second)), nil
}
