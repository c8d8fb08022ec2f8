package sql

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/chronoshq/chronos"
)

// MinuteStats is what finished in one minute (by finished_at, the
// database's clock): the runs by outcome, and a histogram of the schedule
// lag (start minus scheduled instant) of the scheduled runs among them.
type MinuteStats struct {
	Minute    time.Time
	Succeeded int64
	Dead      int64
	// Lag counts the scheduled runs by lag bucket (LagBucket).
	Lag map[int]int64
}

// lagBucketsPerE is the histogram's resolution: buckets are this many to
// each factor of e, so a bucket's middle is within 1.6% of every lag in it.
const lagBucketsPerE = 32

// minLag is the smallest lag told apart (a tenth of a millisecond); less,
// or a negative lag, falls in its bucket.
const minLag = 1e-4

// LagBucket is the bucket of a lag.
func LagBucket(lag time.Duration) int {
	return int(math.Floor(math.Log(max(lag.Seconds(), minLag)) * lagBucketsPerE))
}

// LagOf is the lag a bucket stands for: its geometric middle.
func LagOf(bucket int) time.Duration {
	return time.Duration(math.Exp((float64(bucket)+0.5)/lagBucketsPerE) * float64(time.Second))
}

// FinishedBetween reads, minute by minute, the runs that finished at or
// after since and before until (whole minutes; a zero until is no bound),
// in one pass over job_runs_prunable_idx that counts them by minute,
// outcome and lag bucket in the database. Its cost grows with the runs it
// reads; a minute that has passed no longer changes, so the console asks
// again only for the last few minutes. Minutes come oldest first; one in
// which nothing finished is absent.
func (db *DB) FinishedBetween(ctx context.Context, since, until time.Time) ([]MinuteStats, error) {
	args := []any{since, minLag, lagBucketsPerE}
	cond := ""
	if !until.IsZero() {
		args = append(args, until)
		cond = " AND finished_at < $4" // an index bound, not a filter: its own statement
	}
	rows, err := db.Pool.Query(ctx, `
		SELECT date_trunc('minute', finished_at) AS m, status::text,
		       CASE WHEN trigger = 'schedule' AND started_at IS NOT NULL
		            THEN floor(ln(greatest(date_part('epoch', started_at - scheduled_at), $2)) * $3)::int END,
		       count(*)
		  FROM job_runs
		 WHERE status IN ('succeeded', 'dead') AND finished_at >= $1`+cond+`
		 GROUP BY 1, 2, 3`, args...) // no ORDER BY: sorted, the groups spill to disk; hashed, they do not
	if err != nil {
		return nil, mapErr(err, "finished runs")
	}
	defer rows.Close()
	byMinute := map[time.Time]*MinuteStats{}
	for rows.Next() {
		var (
			m      time.Time
			st     string
			bucket *int
			n      int64
		)
		if err := rows.Scan(&m, &st, &bucket, &n); err != nil {
			return nil, mapErr(err, "finished runs")
		}
		m = m.UTC()
		ms := byMinute[m]
		if ms == nil {
			ms = &MinuteStats{Minute: m, Lag: map[int]int64{}}
			byMinute[m] = ms
		}
		if chronos.RunStatus(st) == chronos.StatusSucceeded {
			ms.Succeeded += n
		} else {
			ms.Dead += n
		}
		if bucket != nil {
			ms.Lag[*bucket] += n
		}
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err, "finished runs")
	}
	out := make([]MinuteStats, 0, len(byMinute))
	for _, ms := range byMinute {
		out = append(out, *ms)
	}
	slices.SortFunc(out, func(a, b MinuteStats) int { return a.Minute.Compare(b.Minute) })
	return out, nil
}
