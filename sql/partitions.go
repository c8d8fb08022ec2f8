package sql

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
)

// Partitions of job_runs and run_attempts (migrations 019 and 020; the
// package doc's "Partitions" says what and why). The leader keeps them:
// EnsureRunPartitions creates them ahead, PruneRunPartitions drops those
// past the retention. Both are DDL run one partition per short
// transaction under PartitionLockTimeout, so a busy table makes them try
// again at the next tick rather than queue claims behind them.

// PartitionLockTimeout bounds how long partition upkeep waits for a lock.
// While it waits, queries that need the table queue behind it: this is the
// longest a claim or a completion can be held up by the upkeep's wait.
const PartitionLockTimeout = 100 * time.Millisecond

// PartitionIdleTimeout bounds how long partition upkeep keeps its locks
// while its client is silent between two statements (see partitionTx):
// well above a statement's round trip, well below a lookahead.
const PartitionIdleTimeout = time.Second

// minAttemptIDs is the narrowest run id range of an attempts partition: at
// a few runs a minute a range holds months of attempts, which is little.
const minAttemptIDs = 100_000

// partitionWidths are the widths a runs partition may have, widest first;
// each divides a day, so partitions line up on round instants.
var partitionWidths = []time.Duration{24 * time.Hour, 6 * time.Hour, time.Hour, 15 * time.Minute, 5 * time.Minute, time.Minute}

// RunPartitionWidth is the time range of one job_runs partition for a
// retention: the widest of a day, 6 h, 1 h, 15 min, 5 min, 1 min that
// fits four times into it (a minute at least). A run is dropped between
// retention and retention plus one width after its scheduled instant, and
// about retention/width + 3 partitions are live (past, current, ahead).
func RunPartitionWidth(retention time.Duration) time.Duration {
	for _, w := range partitionWidths {
		if 4*w <= retention {
			return w
		}
	}
	return time.Minute
}

// ErrPartitionBusy: a partition's DDL did not get its lock within
// PartitionLockTimeout. Nothing changed; the next tick tries again.
var ErrPartitionBusy = errors.New("partition upkeep: table busy, lock not granted in time")

// partitionBoundsSQL lists the partitions of $1 with their bounds as text
// (NULL for MINVALUE, and both NULL for the default partition).
const partitionBoundsSQL = `
	SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT',
	       substring(pg_get_expr(c.relpartbound, c.oid) FROM 'FROM \(''([^'']*)''\)'),
	       substring(pg_get_expr(c.relpartbound, c.oid) FROM 'TO \(''([^'']*)''\)')
	  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
	 WHERE i.inhparent = $1::regclass`

// RunPartition is one partition of job_runs (Lo and Hi its scheduled_at
// range, Lo nil for MINVALUE) or of run_attempts (LoID and HiID its run id
// range). The default partitions are not listed.
type RunPartition struct {
	Name       string
	Lo, Hi     *time.Time
	LoID, HiID *int64
}

// RunPartitions lists the range partitions of job_runs and of
// run_attempts, each in bound order.
func (db *DB) RunPartitions(ctx context.Context) (runs, attempts []RunPartition, err error) {
	// list reads table's partitions, whose bounds are of type bound.
	list := func(table, bound string, scan func(pgx.CollectableRow, *RunPartition) error) ([]RunPartition, error) {
		rows, err := db.Pool.Query(ctx, `
			SELECT name, lo::`+bound+`, hi::`+bound+` FROM (`+partitionBoundsSQL+`) p (name, dflt, lo, hi)
			 WHERE NOT dflt ORDER BY hi::`+bound, table)
		if err != nil {
			return nil, fmt.Errorf("list %s partitions: %w", table, err)
		}
		ps, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (RunPartition, error) {
			var p RunPartition
			err := scan(r, &p)
			return p, err
		})
		if err != nil {
			return nil, fmt.Errorf("list %s partitions: %w", table, err)
		}
		return ps, nil
	}
	runs, err = list("job_runs", "timestamptz", func(r pgx.CollectableRow, p *RunPartition) error {
		err := r.Scan(&p.Name, &p.Lo, &p.Hi)
		utcPtr(&p.Lo)
		utcPtr(&p.Hi)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	attempts, err = list("run_attempts", "bigint", func(r pgx.CollectableRow, p *RunPartition) error {
		return r.Scan(&p.Name, &p.LoID, &p.HiID)
	})
	if err != nil {
		return nil, nil, err
	}
	return runs, attempts, nil
}

// EnsureRunPartitions creates job_runs partitions of the given width until
// they reach ahead past the database's now, and run_attempts partitions
// until the next run ids have one. It returns the names it created.
//
// Runs that waited in the default partition for a range (a leader was
// away longer than ahead) stay there: the range is covered before the
// first of them and after the last (see createPartition). A gap of more than one width (a
// long outage) is not filled backwards either.
func (db *DB) EnsureRunPartitions(ctx context.Context, width, ahead time.Duration) ([]string, error) {
	if width <= 0 {
		return nil, errors.New("ensure run partitions: width must be positive")
	}
	var created []string
	for {
		var lo, hi *time.Time
		var done bool
		// The next range starts where the last one ends, or at the start
		// of the current width when that is later (after a gap, or on a new
		// installation); it ends on the next boundary, so partitions line
		// up on round instants.
		err := db.Pool.QueryRow(ctx, `
			WITH last AS (
				SELECT max(hi::timestamptz) AS hi FROM (`+partitionBoundsSQL+`) p (name, dflt, lo, hi) WHERE NOT dflt
			), next AS (
				SELECT greatest(last.hi, date_bin($2::bigint * interval '1 microsecond', now(), 'epoch')) AS lo,
				       last.hi >= now() + $3::bigint * interval '1 microsecond' AS done
				  FROM last
			)
			SELECT lo, date_bin($2::bigint * interval '1 microsecond', lo, 'epoch') + $2::bigint * interval '1 microsecond', coalesce(done, false)
			  FROM next`, "job_runs", micros(width), micros(ahead)).Scan(&lo, &hi, &done)
		if err != nil {
			return created, fmt.Errorf("ensure run partitions: %w", err)
		}
		if done {
			break
		}
		name := "job_runs_p" + lo.UTC().Format("20060102_150405")
		names, err := db.createPartition(ctx, "job_runs", name, "scheduled_at", lo.UTC().Format(time.RFC3339Nano), hi.UTC().Format(time.RFC3339Nano))
		if err != nil {
			return created, err
		}
		created = append(created, names...)
	}
	// Attempts: at least half a range of run ids ahead of the identity,
	// ranges as wide as the ids the last complete runs partition used.
	w, err := db.attemptIDWidth(ctx)
	if err != nil {
		return created, err
	}
	for {
		var lo, hi int64
		var done bool
		err := db.Pool.QueryRow(ctx, `
			WITH last AS (
				SELECT max(hi::bigint) AS hi FROM (`+partitionBoundsSQL+`) p (name, dflt, lo, hi) WHERE NOT dflt
			), cur AS (
				SELECT last_value AS id FROM job_runs_id_seq
			)
			SELECT coalesce(last.hi, 1), cur.id, coalesce(last.hi - cur.id >= $2, false) FROM last, cur`,
			"run_attempts", w/2).Scan(&lo, &hi, &done)
		if err != nil {
			return created, fmt.Errorf("ensure attempt partitions: %w", err)
		}
		if done {
			break
		}
		hi = max(lo, hi) + w
		name := fmt.Sprintf("run_attempts_p%d", lo)
		names, err := db.createPartition(ctx, "run_attempts", name, "run_id", fmt.Sprint(lo), fmt.Sprint(hi))
		if err != nil {
			return created, err
		}
		created = append(created, names...)
	}
	return created, nil
}

// attemptIDWidth is the id range of the next attempts partition: the ids
// the runs of the newest complete job_runs partition (not the legacy one)
// took, and minAttemptIDs at least.
func (db *DB) attemptIDWidth(ctx context.Context) (int64, error) {
	runs, _, err := db.RunPartitions(ctx)
	if err != nil {
		return 0, err
	}
	var now time.Time
	if err := db.Pool.QueryRow(ctx, "SELECT now()").Scan(&now); err != nil {
		return 0, fmt.Errorf("attempt partition width: %w", err)
	}
	var w int64
	for i := len(runs) - 1; i >= 0; i-- {
		p := runs[i]
		if p.Lo == nil || p.Hi.After(now) {
			continue
		}
		if err := db.Pool.QueryRow(ctx, fmt.Sprintf("SELECT coalesce(max(id) - min(id), 0) FROM %s",
			pgx.Identifier{p.Name}.Sanitize())).Scan(&w); err != nil {
			return 0, fmt.Errorf("attempt partition width: %w", err)
		}
		break
	}
	return max(w, minAttemptIDs), nil
}

// createPartition creates partition name of parent for [lo, hi) of key
// and attaches it, in one transaction, and returns the names it created.
// The table is made from the parent's definition (LIKE), with the default
// partition's storage parameters (autovacuum).
//
// Rows of the default partition in [lo, hi) are not moved: a worker's
// fenced write (WHERE id = ...) blocked behind the move would find its
// row deleted and take its lease for lost. They stay in the default
// partition, which deletes its finished rows past the retention, and the
// range is split around them: name covers [lo, first of them), and
// name_after the rest after the last of them. So only the stretch between
// the first and the last stray has no partition (a run scheduled there
// goes to the default partition too); the rest of the range is covered,
// and the next range still starts at hi. (Covering only what follows the
// last stray left the whole range before it uncovered: a leader back from
// an outage left the next hour's runs in the default partition.)
//
// Writes wait while it runs (milliseconds: the default partition holds
// only strays): the parent is locked SHARE ROW EXCLUSIVE, not just the
// SHARE UPDATE EXCLUSIVE that ATTACH needs, because an insert routed to
// the default partition under the old bounds and held there by this
// transaction would fail its partition check once the new range exists.
// Reads go on.
func (db *DB) createPartition(ctx context.Context, parent, name, key, lo, hi string) ([]string, error) {
	dflt := pgx.Identifier{parent + "_default"}.Sanitize()
	p := pgx.Identifier{parent}.Sanitize()
	k := pgx.Identifier{key}.Sanitize()
	var created []string
	err := db.partitionTx(ctx, "create partition "+name, func(tx pgx.Tx) error {
		created = created[:0] // a retry starts again
		// The default partition's lock is asked for NOWAIT: a statement
		// that read job_runs (and so holds the default partition) and then
		// writes it (and so wants the parent, which this transaction now
		// holds) would otherwise wait on the upkeep while the upkeep waits
		// on it. Postgres broke that cycle only when the upkeep's
		// lock_timeout ran out, every claim of the cluster queued behind
		// it until then (a minute's lag p99 of 45-109 ms at 5,000 runs/s),
		// or with deadlock_timeout below it, by failing the statement. Now
		// the upkeep lets go at once and tries again after a pause.
		if err := lockPartition(ctx, tx, p, "SHARE ROW EXCLUSIVE", dflt); err != nil {
			return err
		}
		// The default partition's first row in range, and the first value
		// after its last one (timestamps have microseconds, ids are
		// integers).
		var first, after *string
		next := "+ 1"
		if key == "scheduled_at" {
			next = "+ interval '1 microsecond'"
		}
		var before, fits bool
		if err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT min(%[1]s)::text, (max(%[1]s) %[2]s)::text,
			       coalesce(min(%[1]s) > '%[4]s', true), coalesce(max(%[1]s) %[2]s < '%[5]s', true)
			  FROM %[3]s WHERE %[1]s >= '%[4]s' AND %[1]s < '%[5]s'`,
			k, next, dflt, lo, hi)).Scan(&first, &after, &before, &fits); err != nil {
			return err
		}
		if !before && !fits {
			return fmt.Errorf("the default partition holds rows at the very start and the very end of [%s, %s)", lo, hi)
		}
		var opts string
		if err := tx.QueryRow(ctx, `SELECT coalesce(' WITH (' || array_to_string(reloptions, ', ') || ')', '')
			FROM pg_class WHERE oid = $1::regclass`, parent+"_default").Scan(&opts); err != nil {
			return err
		}
		type part struct{ name, lo, hi string }
		var parts []part
		switch {
		case first == nil: // no stray: the whole range
			parts = []part{{name, lo, hi}}
		case before && fits:
			parts = []part{{name, lo, *first}, {name + "_after", *after, hi}}
		case before:
			parts = []part{{name, lo, *first}}
		default:
			parts = []part{{name, *after, hi}}
		}
		for _, pt := range parts {
			t := pgx.Identifier{pt.name}.Sanitize()
			for _, s := range []string{
				"CREATE TABLE " + t + " (LIKE " + p + " INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMPRESSION)" + opts,
				fmt.Sprintf("ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM ('%s') TO ('%s')", p, t, pt.lo, pt.hi),
			} {
				if _, err := tx.Exec(ctx, s); err != nil {
					return err
				}
			}
			created = append(created, pt.name)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return created, nil
}

// errLockRefused: lockPartition did not get its locks.
var errLockRefused = errors.New("lock not available")

// lockBusy tells whether err is a lock the upkeep did not get: refused by
// lockPartition, or not granted within the lock timeout (lock_not_available).
func lockBusy(err error) bool {
	return errors.Is(err, errLockRefused) || pgCode(err) == "55P03"
}

// lockPartitionSQL locks a parent table in a mode (waiting for it up to
// the transaction's lock_timeout), then one of its partitions ACCESS
// EXCLUSIVE if that is free at once (NOWAIT), and records in the
// transaction whether it got both. A refusal of either is caught inside
// the block, which rolls back the block's subtransaction and with it the
// parent's lock: the upkeep lets go of job_runs in the same statement,
// not a round trip later, the transaction goes on, and the server logs no
// ERROR. On a busy cluster the upkeep is refused a few times a minute, and
// an ERROR line in Postgres's log each time (as a plain LOCK ... NOWAIT
// wrote) reads like a fault to whoever reads or alerts on that log.
const lockPartitionSQL = `DO $$ BEGIN
	LOCK TABLE ONLY %s IN %s MODE;
	LOCK TABLE %s IN ACCESS EXCLUSIVE MODE NOWAIT;
	PERFORM set_config('chronos.locked', 'on', true);
EXCEPTION WHEN lock_not_available THEN
	PERFORM set_config('chronos.locked', 'off', true);
END $$`

// lockPartition locks parent in mode and then its partition part ACCESS
// EXCLUSIVE in tx, or neither: errLockRefused when the parent was not
// granted within the lock timeout or another session holds any lock on
// the partition. Both are quoted identifiers (pgx.Identifier.Sanitize).
// The upkeep never waits for a partition while it holds its parent (see
// createPartition).
//
// The block and the reading of its outcome go in one round trip: the
// parent, once granted, holds up every writer of job_runs until commit.
func lockPartition(ctx context.Context, tx pgx.Tx, parent, mode, part string) error {
	b := &pgx.Batch{}
	b.Queue(fmt.Sprintf(lockPartitionSQL, parent, mode, part))
	b.Queue("SELECT current_setting('chronos.locked')")
	br := tx.SendBatch(ctx, b)
	var locked string
	_, err := br.Exec()
	if err == nil {
		err = br.QueryRow().Scan(&locked)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if locked != "on" {
		return fmt.Errorf("lock %s and %s: %w", parent, part, errLockRefused)
	}
	return nil
}

// partitionTries is how many times partitionTx tries for its locks, a
// pause between tries, before it gives up until the next tick.
const partitionTries = 5

// partitionTx runs f in a transaction under PartitionLockTimeout. A lock
// not granted in time is tried again after a pause, up to partitionTries
// times, then ErrPartitionBusy.
func (db *DB) partitionTx(ctx context.Context, what string, f func(pgx.Tx) error) error {
	var err error
	for try := 0; try < partitionTries; try++ {
		if try > 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s: %w", what, ctx.Err())
			case <-time.After(time.Duration(50+rand.IntN(150)) * time.Millisecond):
			}
		}
		err = pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
			// The locks are held from the LOCK to the commit, over several
			// round trips: a client stalled in between (a starved leader on
			// a loaded machine) held them, and every claim, start,
			// completion and materialized run of the cluster waited, for
			// seconds. idle_in_transaction_session_timeout has the server
			// end the transaction, and let go of them, once the client has
			// been quiet for PartitionIdleTimeout: the upkeep is then tried
			// again at the next tick, on another connection.
			for _, set := range []string{
				fmt.Sprintf("SET LOCAL lock_timeout = %d", PartitionLockTimeout.Milliseconds()),
				fmt.Sprintf("SET LOCAL idle_in_transaction_session_timeout = %d", PartitionIdleTimeout.Milliseconds()),
			} {
				if _, err := tx.Exec(ctx, set); err != nil {
					return err
				}
			}
			return f(tx)
		})
		if !lockBusy(err) {
			break
		}
	}
	if lockBusy(err) {
		return fmt.Errorf("%s: %w", what, ErrPartitionBusy)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// PruneResult says what PruneRunPartitions did.
type PruneResult struct {
	Dropped []string // partitions dropped, of job_runs and run_attempts
	Runs    int64    // runs dropped with them (the planner's estimate) and deleted from the default partition
	// Kept lists the job_runs partitions past the retention kept because
	// they still hold a run that is not finished (pending, leased or
	// running: a retry far ahead, a run held behind another).
	Kept []string
}

// PruneRunPartitions drops the job_runs partitions whose whole range lies
// more than retention before the database's now and that hold no
// unfinished run, and the run_attempts partitions none of whose runs is
// left. The default partition's strays (runs scheduled before the oldest
// partition or after the newest) are deleted one by one once finished
// more than retention ago: it holds few rows.
//
// A partition with an unfinished run stays, whole, until that run is
// finished (Kept): its terminal runs stay with it. Rows are never moved
// out: a run's partition follows from its scheduled_at, which never
// changes.
//
// Dropping takes ACCESS EXCLUSIVE on job_runs (or run_attempts) for a few
// milliseconds: the check for unfinished runs (two index probes) and the
// DROP. Waiting for it is bounded by PartitionLockTimeout; a partition
// that could not be dropped is tried again at the next call.
func (db *DB) PruneRunPartitions(ctx context.Context, retention time.Duration) (PruneResult, error) {
	var res PruneResult
	runs, attempts, err := db.RunPartitions(ctx)
	if err != nil {
		return res, err
	}
	var cutoff time.Time
	if err := db.Pool.QueryRow(ctx, "SELECT now() - $1::bigint * interval '1 microsecond'", micros(retention)).Scan(&cutoff); err != nil {
		return res, fmt.Errorf("prune run partitions: %w", err)
	}
	var busy error
	for _, p := range runs {
		if p.Hi.After(cutoff) {
			break
		}
		t := pgx.Identifier{p.Name}.Sanitize()
		var dropped, active bool
		var n int64
		err := db.partitionTx(ctx, "drop partition "+p.Name, func(tx pgx.Tx) error {
			// Locked before the check: a redrive copies its run's
			// scheduled_at, so a new pending run can appear in an old
			// partition; under the lock none can.
			// NOWAIT for the partition, as for the default partition in
			// createPartition: never wait on a lock while holding job_runs.
			if err := lockPartition(ctx, tx, "job_runs", "ACCESS EXCLUSIVE", t); err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+t+` WHERE status = 'pending')
			                                OR EXISTS (SELECT 1 FROM `+t+` WHERE status IN ('leased', 'running')),
			                                greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = $1::regclass`,
				p.Name).Scan(&active, &n); err != nil {
				return err
			}
			if active {
				return nil
			}
			if _, err := tx.Exec(ctx, "DROP TABLE "+t); err != nil {
				return err
			}
			dropped = true
			return nil
		})
		switch {
		case errors.Is(err, ErrPartitionBusy):
			busy = err
			continue
		case err != nil:
			return res, err
		case active:
			res.Kept = append(res.Kept, p.Name)
		case dropped:
			res.Dropped = append(res.Dropped, p.Name)
			res.Runs += n
		}
	}
	tag, err := db.Pool.Exec(ctx, `
		DELETE FROM job_runs_default
		 WHERE status IN ('succeeded', 'dead', 'missed') AND finished_at < now() - $1::bigint * interval '1 microsecond'`,
		micros(retention))
	if err != nil {
		return res, mapErr(err, "prune default run partition")
	}
	res.Runs += tag.RowsAffected()

	// Attempts partitions: droppable once the identity has passed their
	// range (no new run can fall in it) and no run in it is left. No lock
	// is needed for the check: neither can change afterwards.
	var cur int64
	if err := db.Pool.QueryRow(ctx, "SELECT last_value FROM job_runs_id_seq").Scan(&cur); err != nil {
		return res, fmt.Errorf("prune attempt partitions: %w", err)
	}
	for _, p := range attempts {
		if *p.HiID > cur {
			break
		}
		var left bool
		q, args := `SELECT EXISTS (SELECT 1 FROM job_runs WHERE id < $1)`, []any{*p.HiID}
		if p.LoID != nil {
			q, args = `SELECT EXISTS (SELECT 1 FROM job_runs WHERE id >= $1 AND id < $2)`, []any{*p.LoID, *p.HiID}
		}
		if err := db.Pool.QueryRow(ctx, q, args...).Scan(&left); err != nil {
			return res, fmt.Errorf("prune attempt partitions: %w", err)
		}
		if left {
			continue
		}
		t := pgx.Identifier{p.Name}.Sanitize()
		err := db.partitionTx(ctx, "drop partition "+p.Name, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "LOCK TABLE ONLY run_attempts IN ACCESS EXCLUSIVE MODE"); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "DROP TABLE "+t)
			return err
		})
		if errors.Is(err, ErrPartitionBusy) {
			busy = err
			continue
		}
		if err != nil {
			return res, err
		}
		res.Dropped = append(res.Dropped, p.Name)
	}
	// Attempts in the default partition whose run is gone.
	if _, err := db.Pool.Exec(ctx, `
		DELETE FROM run_attempts_default a WHERE NOT EXISTS (SELECT 1 FROM job_runs r WHERE r.id = a.run_id)`); err != nil {
		return res, mapErr(err, "prune default attempt partition")
	}
	return res, busy
}
