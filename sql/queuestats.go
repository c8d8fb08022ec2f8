package sql

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// QueueStats is the leader's latest look at the run queue: how many runs
// are in each active status, and how long the oldest run that is due has
// been waiting. Terminal runs (succeeded, dead) are not counted: their
// number grows with RUN_RETENTION, and counting them every few seconds
// would cost what the history weighs; chronos_runs_total counts them as
// they happen.
type QueueStats struct {
	Pending int64 // pending runs, due or not (retries in backoff, runs created ahead)
	Due     int64 // pending runs whose available_at has passed: claimable now
	Leased  int64
	Running int64
	// OldestDue is how long the oldest due pending run had waited past its
	// available_at when the stats were computed; 0 when none was due.
	OldestDue  time.Duration
	ComputedAt time.Time
	ComputedBy string // the instance that computed them (the leader)
	// Age is how long ago, by the database's clock, they were computed.
	Age time.Duration
}

// refreshQueueStatsSQL counts the active runs, each status through its own
// partial index (job_runs_claimable_idx and job_runs_held_idx for the
// pending ones, claimable and held; job_runs_leases_idx), so its cost
// grows with the runs in flight or waiting, never with the history; the
// oldest due run is the first entry of job_runs_claimable_idx. It rewrites
// the single queue_stats row (a HOT update: no index column changes).
const refreshQueueStatsSQL = `
	INSERT INTO queue_stats AS q (id, pending, due, leased, running, oldest_due_at, computed_at, computed_by)
	SELECT true,
	       (SELECT count(*) FROM job_runs WHERE status = 'pending' AND NOT held)
	         + (SELECT count(*) FROM job_runs WHERE held AND status = 'pending'),
	       (SELECT count(*) FROM job_runs WHERE status = 'pending' AND NOT held AND available_at <= now())
	         + (SELECT count(*) FROM job_runs WHERE held AND status = 'pending' AND available_at <= now()),
	       (SELECT count(*) FROM job_runs WHERE status = 'leased'),
	       (SELECT count(*) FROM job_runs WHERE status = 'running'),
	       least((SELECT min(available_at) FROM job_runs WHERE status = 'pending' AND NOT held AND available_at <= now()),
	             (SELECT min(available_at) FROM job_runs WHERE held AND status = 'pending' AND available_at <= now())),
	       now(), $1
	ON CONFLICT (id) DO UPDATE
	   SET pending = excluded.pending, due = excluded.due, leased = excluded.leased,
	       running = excluded.running, oldest_due_at = excluded.oldest_due_at,
	       computed_at = excluded.computed_at, computed_by = excluded.computed_by
	RETURNING ` + queueStatsColumns

// queueStatsColumns are read back in the order scanQueueStats expects.
const queueStatsColumns = `pending, due, leased, running,
	       coalesce(extract(epoch FROM computed_at - oldest_due_at), 0)::float8,
	       computed_at, computed_by, greatest(extract(epoch FROM now() - computed_at), 0)::float8`

// RefreshQueueStats recomputes the queue statistics, as instance, and
// stores them for every instance to read. The leader calls it every few
// seconds.
func (db *DB) RefreshQueueStats(ctx context.Context, instance string) (QueueStats, error) {
	s, err := scanQueueStats(db.Pool.QueryRow(ctx, refreshQueueStatsSQL, instance))
	if err != nil {
		return QueueStats{}, fmt.Errorf("refresh queue stats: %w", err)
	}
	return s, nil
}

// QueueStats returns the latest stored queue statistics; ok is false when
// no leader has computed any yet.
func (db *DB) QueueStats(ctx context.Context) (s QueueStats, ok bool, err error) {
	s, err = scanQueueStats(db.Pool.QueryRow(ctx, `SELECT `+queueStatsColumns+` FROM queue_stats`))
	if errors.Is(err, pgx.ErrNoRows) {
		return QueueStats{}, false, nil
	}
	if err != nil {
		return QueueStats{}, false, fmt.Errorf("read queue stats: %w", err)
	}
	return s, true, nil
}

func scanQueueStats(row pgx.Row) (QueueStats, error) {
	var s QueueStats
	var oldest, age float64
	if err := row.Scan(&s.Pending, &s.Due, &s.Leased, &s.Running, &oldest, &s.ComputedAt, &s.ComputedBy, &age); err != nil {
		return QueueStats{}, err
	}
	s.OldestDue = seconds(oldest)
	s.Age = seconds(age)
	return s, nil
}

// seconds converts a float number of seconds to a Duration.
func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
