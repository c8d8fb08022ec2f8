package sql

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/internal/instant"
	"github.com/jackc/pgx/v5"
)

// Host back-pressure and the circuit breaker (issue 24, section 2; the
// hosts table of migration 023).
//
// A host holds its runs back by a row of hosts whose held_until is in the
// future: the claim takes no pending run of that origin then, but the
// breaker's probe (hostClearSQL). So that a claim does not walk past the
// held runs again and again (its cost stays O(runs claimed)), whatever
// holds a host back also moves the available_at of the host's pending runs
// to the end of the hold: a deferral at once (Defer), the breaker when it
// opens (ReportHosts), a run created during the hold as it is inserted
// (the trigger of migration 026), and SweepHosts, every second, moves the
// runs retried or handed back since. Only those few are ever walked past.

// Spreading the runs a hold moves: they are due one step apart, in their
// order, over at most holdSpreadMax, not all at one instant when the hold
// ends (a deferral's end would otherwise be a burst at the host that just
// asked for less).
const (
	holdSpreadStep = time.Millisecond
	holdSpreadMax  = 5 * time.Second
)

// holdLead: when a deferral ends, the run that got the answer goes first,
// at its end, and the origin's other runs this much later. A host that
// still says "later" then gets one request, not a burst of them (each
// answered 429, each deferred again in a transaction that waits for the
// host's row: a burst held every worker slot for a while).
const holdLead = time.Second

// holdSlack is how much longer a deferral must be than the hold in force
// for Defer to move the origin's runs again.
const holdSlack = time.Second

// hostClearSQL is the claim's condition on a pending run r that its host
// does not hold it back (see claimSQL). The uncorrelated EXISTS is an
// InitPlan, evaluated once per claim: while no host holds anything back
// (nearly always) the per-run probe of hosts is never made.
const hostClearSQL = `(NOT EXISTS (SELECT 1 FROM hosts WHERE held_until > now())
	           OR NOT EXISTS (SELECT 1 FROM hosts h
	                           WHERE h.origin = (SELECT chronos_origin(j.target_url) FROM jobs j WHERE j.id = r.job_id)
	                             AND h.held_until > now() AND h.probe_run_id IS DISTINCT FROM r.id))`

// hostsSQL returns q, a statement holding hostClearSQL, as it can run on
// this database: without that condition while the hosts table does not
// exist yet. A binary newer than its schema (MIGRATE_ON_START=false, or
// during the migration) keeps claiming, without host back-pressure, until
// HostsReady finds the table.
func (db *DB) hostsSQL(ctx context.Context, q string) string {
	if db.HostsReady(ctx) {
		return q
	}
	return strings.Replace(q, " AND "+hostClearSQL, "", 1)
}

// HostsReady reports whether the hosts table exists (see schemaHas).
func (db *DB) HostsReady(ctx context.Context) bool {
	return db.schemaHas(ctx, &db.hosts, `SELECT to_regclass('hosts') IS NOT NULL`)
}

// originRunsSQL selects the pending runs (p) of origin $1, for a hold to
// move.
const originRunsSQL = `SELECT p.id, p.scheduled_at, p.available_at
	  FROM jobs j JOIN job_runs p ON p.job_id = j.id
	 WHERE chronos_origin(j.target_url) = $1 AND p.status = 'pending'`

// moveRunsSQL moves the pending runs of origin $1 that are due before $2
// (and not run $3) to $4 plus $7 (see holdLead), spread in their order
// (see holdSpreadStep), and
// returns the last instant it moved one to. A run being claimed is waited
// for (a claim never waits for a lock: SKIP LOCKED), and left as the claim
// leaves it; the host's row, locked first, orders the holds of one origin.
var moveRunsSQL = `
	WITH due AS (
		` + originRunsSQL + ` AND p.available_at < $2 AND p.id IS DISTINCT FROM $3
		 ORDER BY p.id
		   FOR UPDATE OF p
	), ranked AS (
		SELECT id, scheduled_at, row_number() OVER (ORDER BY available_at, id) AS n, count(*) OVER () AS total
		  FROM due
	), moved AS (
		UPDATE job_runs p
		   SET available_at = $4::timestamptz + ($7::bigint + ranked.n *
		           least($5::bigint, $6::bigint / ranked.total)) * interval '1 microsecond'
		  FROM ranked
		 WHERE p.id = ranked.id AND p.scheduled_at = ranked.scheduled_at
		RETURNING p.available_at
	)
	SELECT count(*), max(available_at) FROM moved`

// moveRuns runs moveRunsSQL in tx and records on the host row how far it
// moved runs (pushed_until, for a closing breaker to bring them back).
// They are due lead after to and later.
func moveRuns(ctx context.Context, tx pgx.Tx, origin string, before time.Time, except *int64, to time.Time, lead time.Duration) (int, error) {
	var (
		n    int
		last *time.Time
	)
	if err := tx.QueryRow(ctx, moveRunsSQL, origin, before, except, to, micros(holdSpreadStep), micros(holdSpreadMax), micros(lead)).
		Scan(&n, &last); err != nil {
		return 0, fmt.Errorf("move runs of %s: %w", origin, err)
	}
	if last != nil {
		if _, err := tx.Exec(ctx, `UPDATE hosts SET pushed_until = greatest(pushed_until, $2) WHERE origin = $1`,
			origin, *last); err != nil {
			return 0, fmt.Errorf("move runs of %s: %w", origin, err)
		}
	}
	return n, nil
}

// Deferral is a 429 or 503 answer with Retry-After to one attempt: the
// run, and every pending run of its origin, waits Delay (by the
// database's clock) without the attempt counting.
type Deferral struct {
	Lease
	Origin     string
	Delay      time.Duration
	StatusCode int
	Error      string
	// MaxDeferrals bounds the uncounted deferrals of one run: past it the
	// answer is an attempt again (Deferred false), so a host that always
	// says "later" cannot keep a run pending for ever.
	MaxDeferrals int
}

// DeferResult is what Defer did.
type DeferResult struct {
	// Deferred: the run is pending again, uncounted, until Until. False
	// when the run used up its MaxDeferrals: nothing was written, and the
	// caller records the answer as an attempt.
	Deferred bool
	Until    time.Time
	// Moved is how many other pending runs of the origin now wait too.
	Moved int
	// Started: the origin was not deferred this long already (a new or a
	// longer deferral, worth an event; repeats of the same are not).
	Started bool
}

// Defer hands a leased run back to pending after its host deferred it
// (see Deferral), fenced on the lease: the attempt is undone as Release
// undoes it (attempt_count back down, its run_attempts row deleted; the
// answer is kept as the run's last_error and last_status_code), the run is
// available again after Delay, and so is every pending run of the origin
// due sooner. ErrLeaseLost when the lease is gone.
func (db *DB) Defer(ctx context.Context, d Deferral) (DeferResult, error) {
	var res DeferResult
	if d.Origin == "" {
		return res, errors.New("defer run: no origin")
	}
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		return res, mapErr(err, "defer run")
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// The host's row first: its lock orders the deferrals (and sweeps) of
	// one origin, so two never move the same runs in opposite orders.
	var (
		prevDeferred, prevHeld *time.Time
		forever                bool // an open breaker holds the runs already
	)
	if _, err := tx.Exec(ctx, `INSERT INTO hosts (origin) VALUES ($1) ON CONFLICT DO NOTHING`, d.Origin); err != nil {
		return res, mapErr(err, "defer run")
	}
	if err := tx.QueryRow(ctx, `
		SELECT deferred_until, CASE WHEN isfinite(held_until) THEN held_until END, NOT coalesce(isfinite(held_until), true)
		  FROM hosts WHERE origin = $1 FOR UPDATE`, d.Origin).Scan(&prevDeferred, &prevHeld, &forever); err != nil {
		return res, mapErr(err, "defer run")
	}
	err = tx.QueryRow(ctx, handBackSQL(`,
			       available_at = now() + $5::bigint * interval '1 microsecond',
			       deferrals = deferrals + 1, last_status_code = $6, last_error = $7`,
		" AND deferrals < $8", "available_at"),
		fenceArgs(d.Lease, micros(max(d.Delay, 0)), nonZero(int32(d.StatusCode)), nonEmpty(storable(d.Error, maxErrorBytes)),
			d.MaxDeferrals)...).Scan(&res.Until)
	if errors.Is(err, pgx.ErrNoRows) {
		var held bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM job_runs WHERE `+fence+`)`, fenceArgs(d.Lease)...).
			Scan(&held); err != nil {
			return res, mapErr(err, "defer run")
		}
		if held {
			return res, nil // deferrals used up: the caller completes the attempt
		}
		return res, fmt.Errorf("defer run %d attempt %d: %w", d.RunID, d.Attempt, ErrLeaseLost)
	}
	if err != nil {
		return res, mapErr(err, "defer run")
	}
	res.Deferred = true
	if _, err := tx.Exec(ctx, `
		UPDATE hosts
		   SET deferred_until = greatest(deferred_until, $2), held_until = greatest(held_until, $2),
		       deferrals = deferrals + 1, last_status_code = $3, last_error = $4, updated_at = now()
		 WHERE origin = $1`, d.Origin, res.Until, nonZero(int32(d.StatusCode)), nonEmpty(storable(d.Error, maxErrorBytes))); err != nil {
		return res, mapErr(err, "defer run")
	}
	// A deferral no more than holdSlack longer than one in force moved
	// the runs already: under a stream of 429s each would otherwise move
	// every waiting run again by a few milliseconds. The claim holds the
	// few that come due in the slack, and the sweep moves them.
	if !forever && (prevHeld == nil || prevHeld.Add(holdSlack).Before(res.Until)) {
		if res.Moved, err = moveRuns(ctx, tx, d.Origin, res.Until, &d.RunID, res.Until, holdLead); err != nil {
			return res, err
		}
	}
	res.Started = prevDeferred == nil || res.Until.After(prevDeferred.Add(holdSlack))
	if err := tx.Commit(ctx); err != nil {
		return res, mapErr(err, "defer run")
	}
	return res, nil
}

// HostReport is what a batch of attempts said about one origin's health.
type HostReport struct {
	Origin string
	// Answered: some attempt got an answer other than a 5xx (the host is
	// up), which ends a run of failures and closes an open breaker.
	Answered bool
	// Failures counts connection failures and 5xx answers after the last
	// such answer (all of them when there was none).
	Failures int
	// FailedRuns are the runs of those failures: the breaker reopens when
	// its probe is among them.
	FailedRuns []int64
	StatusCode int    // of the last failure
	Error      string // of the last failure
}

// Breaker configures the circuit breaker: Failures consecutive failures
// open it for Cooldown. Failures <= 0 turns it off (failures are still
// counted).
type Breaker struct {
	Failures int
	Cooldown time.Duration
}

// HostChange is what ReportHosts did to one origin's breaker.
type HostChange struct {
	Origin    string
	Opened    bool // opened, or reopened after its probe failed
	Closed    bool
	Failures  int
	OpenUntil time.Time // when Opened
	Moved     int       // runs moved by opening or closing
}

// ReportHosts records what attempts said about their hosts (see
// HostReport): it counts consecutive failures, opens an origin's breaker
// at b.Failures of them, and closes it on an answer. It returns the
// breakers that opened or closed. An origin that only answered and has no
// row costs a lookup, no write.
func (db *DB) ReportHosts(ctx context.Context, reports []HostReport, b Breaker) ([]HostChange, error) {
	var out []HostChange
	for _, r := range reports {
		if r.Origin == "" || (!r.Answered && r.Failures == 0) {
			continue
		}
		c, err := db.reportHost(ctx, r, b)
		if err != nil {
			return out, err
		}
		if c.Opened || c.Closed {
			out = append(out, c)
		}
	}
	return out, nil
}

// reportHost is ReportHosts for one origin, in a transaction of its own.
func (db *DB) reportHost(ctx context.Context, r HostReport, b Breaker) (HostChange, error) {
	c := HostChange{Origin: r.Origin}
	what := "report host " + r.Origin
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		return c, mapErr(err, what)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if r.Failures > 0 {
		if _, err := tx.Exec(ctx, `INSERT INTO hosts (origin) VALUES ($1) ON CONFLICT DO NOTHING`, r.Origin); err != nil {
			return c, mapErr(err, what)
		}
	}
	var (
		failures int
		open     bool
		probe    *int64
		pushed   *time.Time
	)
	err = tx.QueryRow(ctx, `
		SELECT consecutive_failures, opened_at IS NOT NULL, probe_run_id, pushed_until
		  FROM hosts WHERE origin = $1 FOR UPDATE`, r.Origin).Scan(&failures, &open, &probe, &pushed)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, nil // answers from a host never in trouble
	}
	if err != nil {
		return c, mapErr(err, what)
	}
	if r.Answered {
		if failures == 0 && !open && r.Failures == 0 {
			return c, nil // the common case: nothing to write
		}
		failures = 0
		if open {
			open, c.Closed = false, true
		}
	}
	failures += r.Failures
	c.Failures = failures
	switch {
	case open && probe != nil && slices.Contains(r.FailedRuns, *probe):
		c.Opened = true // the probe failed: another cooldown
	case !open && b.Failures > 0 && r.Failures > 0 && failures >= b.Failures:
		c.Opened = true
	}
	var status *int32
	var lastErr *string
	if r.Failures > 0 {
		status, lastErr = nonZero(int32(r.StatusCode)), nonEmpty(storable(r.Error, maxErrorBytes))
	}
	switch {
	case c.Opened:
		// The cooldown runs from this statement, not from the start of the
		// transaction (now()), which may have waited for the host's row
		// behind another instance's report: the last failure may have
		// arrived after that start.
		err = tx.QueryRow(ctx, `
			UPDATE hosts
			   SET consecutive_failures = $2, opened_at = clock_timestamp(),
			       open_until = clock_timestamp() + $3::bigint * interval '1 microsecond',
			       probe_run_id = NULL, held_until = 'infinity', breaker_opens = breaker_opens + 1,
			       last_status_code = coalesce($4, last_status_code), last_error = coalesce($5, last_error),
			       updated_at = now()
			 WHERE origin = $1
			RETURNING open_until`, r.Origin, failures, micros(b.Cooldown), status, lastErr).Scan(&c.OpenUntil)
		if err != nil {
			return c, mapErr(err, what)
		}
		// Every run due before the probe has answered waits; the sweep
		// picks the probe and keeps moving the rest while it is open.
		if c.Moved, err = moveRuns(ctx, tx, r.Origin, c.OpenUntil.Add(b.Cooldown), nil, c.OpenUntil.Add(b.Cooldown), 0); err != nil {
			return c, err
		}
	case c.Closed:
		if _, err = tx.Exec(ctx, `
			UPDATE hosts
			   SET consecutive_failures = $2, opened_at = NULL, open_until = NULL, probe_run_id = NULL,
			       held_until = CASE WHEN deferred_until > now() THEN deferred_until END, pushed_until = NULL,
			       last_status_code = coalesce($3, last_status_code), last_error = coalesce($4, last_error),
			       updated_at = now()
			 WHERE origin = $1`, r.Origin, failures, status, lastErr); err != nil {
			return c, mapErr(err, what)
		}
		if pushed != nil {
			if c.Moved, err = bringBack(ctx, tx, r.Origin, *pushed); err != nil {
				return c, err
			}
		}
	default:
		if _, err = tx.Exec(ctx, `
			UPDATE hosts
			   SET consecutive_failures = $2,
			       last_status_code = coalesce($3, last_status_code), last_error = coalesce($4, last_error),
			       updated_at = now()
			 WHERE origin = $1`, r.Origin, failures, status, lastErr); err != nil {
			return c, mapErr(err, what)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return c, mapErr(err, what)
	}
	return c, nil
}

// bringBack makes the runs of origin that its breaker moved (due up to
// pushed) due now again, when it closes: not before their scheduled
// instant, nor before a deferral still in force, spread as a hold spreads
// them. A retry that happened to be due in that window goes sooner than
// its backoff said; no run goes before its instant.
func bringBack(ctx context.Context, tx pgx.Tx, origin string, pushed time.Time) (int, error) {
	var n int
	err := tx.QueryRow(ctx, `
		WITH due AS (
			`+originRunsSQL+` AND p.available_at > now() AND p.available_at <= $2
			 ORDER BY p.id
			   FOR UPDATE OF p
		), ranked AS (
			SELECT id, scheduled_at, row_number() OVER (ORDER BY available_at, id) - 1 AS n, count(*) OVER () AS total
			  FROM due
		), moved AS (
			UPDATE job_runs p
			   SET available_at = greatest(p.scheduled_at,
			                               coalesce((SELECT deferred_until FROM hosts WHERE origin = $1), now()), now())
			                      + ranked.n * least($3::bigint, $4::bigint / ranked.total) * interval '1 microsecond'
			  FROM ranked
			 WHERE p.id = ranked.id AND p.scheduled_at = ranked.scheduled_at
			RETURNING 1
		)
		SELECT count(*) FROM moved`, origin, pushed, micros(holdSpreadStep), micros(holdSpreadMax)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("bring back runs of %s: %w", origin, err)
	}
	return n, nil
}

// SweepResult is what one SweepHosts did.
type SweepResult struct {
	Held   int // origins holding runs back
	Moved  int // runs moved
	Probes int // probes chosen
}

// hostSweepHorizon is how far ahead of now SweepHosts moves the runs of a
// host with an open breaker: runs due later are moved by a later sweep, if
// the breaker is still open then.
const hostSweepHorizon = 5 * time.Second

// SweepHosts keeps the holds of hosts (see the top of this file): for
// every origin holding runs back it moves the pending runs due before the
// hold's end that a retry or a release made due since (so the claim
// walks past them at most until the next sweep), and for an open breaker
// it picks the probe: the origin's next pending run, due no sooner than
// the cooldown's end, while there is none or the one picked has finished.
// cooldown is the breaker's (the runs of an open breaker are moved that
// far past its probe's instant). Rows another sweep holds are skipped.
func (db *DB) SweepHosts(ctx context.Context, cooldown time.Duration) (SweepResult, error) {
	var res SweepResult
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		return res, mapErr(err, "sweep hosts")
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `UPDATE hosts SET held_until = NULL WHERE held_until <= now()`); err != nil {
		return res, mapErr(err, "sweep hosts")
	}
	type held struct {
		origin    string
		open      bool
		openUntil *time.Time
		probe     *int64
		until     *time.Time // nil: infinity (an open breaker)
		now       time.Time
	}
	rows, err := tx.Query(ctx, `
		SELECT origin, opened_at IS NOT NULL, open_until, probe_run_id,
		       CASE WHEN isfinite(held_until) THEN held_until END, now()
		  FROM hosts WHERE held_until > now()
		 ORDER BY origin
		   FOR UPDATE SKIP LOCKED`)
	hs, err := collect(rows, err, "sweep hosts", func(r scanner) (held, error) {
		var h held
		err := r.Scan(&h.origin, &h.open, &h.openUntil, &h.probe, &h.until, &h.now)
		return h, err
	})
	if err != nil {
		return res, err
	}
	res.Held = len(hs)
	for _, h := range hs {
		var (
			mark time.Time
			lead time.Duration
		)
		switch {
		case h.open && h.openUntil != nil:
			if h.probe, err = ensureProbe(ctx, tx, h.origin, h.probe, *h.openUntil); err != nil {
				return res, err
			}
			if h.probe != nil {
				res.Probes++
			}
			mark = instant.Later(*h.openUntil, h.now).Add(cooldown)
		case h.until != nil:
			mark, lead = *h.until, holdLead
		default:
			continue
		}
		before := instant.Earlier(mark, h.now.Add(hostSweepHorizon))
		n, err := moveRuns(ctx, tx, h.origin, before, h.probe, mark, lead)
		if err != nil {
			return res, err
		}
		res.Moved += n
	}
	if err := tx.Commit(ctx); err != nil {
		return res, mapErr(err, "sweep hosts")
	}
	return res, nil
}

// ensureProbe returns the probe of origin's open breaker: probe while that
// run is still pending or in flight, else the origin's next pending run
// not held behind its job's lock (made due at openUntil, or its instant
// if later), or
// nil when the origin has no pending run.
func ensureProbe(ctx context.Context, tx pgx.Tx, origin string, probe *int64, openUntil time.Time) (*int64, error) {
	if probe != nil {
		var alive bool
		if err := tx.QueryRow(ctx, `
			SELECT EXISTS (SELECT 1 FROM job_runs WHERE id = $1 AND status IN ('pending', 'leased', 'running'))`,
			*probe).Scan(&alive); err != nil {
			return nil, fmt.Errorf("check probe of %s: %w", origin, err)
		}
		if alive {
			return probe, nil
		}
	}
	var id int64
	err := tx.QueryRow(ctx, `
		WITH next AS (
			`+originRunsSQL+` AND NOT p.held
			 ORDER BY p.available_at, p.id LIMIT 1
			   FOR UPDATE OF p SKIP LOCKED
		), probe AS (
			UPDATE job_runs p SET available_at = greatest(p.scheduled_at, $2)
			  FROM next WHERE p.id = next.id AND p.scheduled_at = next.scheduled_at
			RETURNING p.id
		)
		SELECT id FROM probe`, origin, openUntil).Scan(&id)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		id = 0
	case err != nil:
		return nil, fmt.Errorf("pick probe of %s: %w", origin, err)
	}
	var next *int64
	if id != 0 {
		next = &id
	}
	if _, err := tx.Exec(ctx, `UPDATE hosts SET probe_run_id = $2, updated_at = now() WHERE origin = $1`, origin, next); err != nil {
		return nil, fmt.Errorf("pick probe of %s: %w", origin, err)
	}
	return next, nil
}

// hostColumns are the columns of a chronos.Host, in scanHost's order.
const hostColumns = `origin,
	CASE WHEN opened_at IS NOT NULL THEN CASE WHEN open_until > now() THEN 'open' ELSE 'probing' END
	     WHEN deferred_until > now() THEN 'deferred' ELSE 'ok' END,
	deferred_until, consecutive_failures, opened_at, open_until, probe_run_id, deferrals, breaker_opens,
	last_status_code, coalesce(last_error, ''), updated_at`

func scanHost(row pgx.CollectableRow) (chronos.Host, error) {
	var h chronos.Host
	err := row.Scan(&h.Origin, &h.State, &h.DeferredUntil, &h.ConsecutiveFailures, &h.OpenedAt, &h.OpenUntil,
		&h.ProbeRunID, &h.Deferrals, &h.BreakerOpens, &h.LastStatusCode, &h.LastError, &h.UpdatedAt)
	return h, err
}

// Hosts lists the origins that ever deferred runs or failed, in origin
// order.
func (db *DB) Hosts(ctx context.Context) ([]chronos.Host, error) {
	rows, err := db.Pool.Query(ctx, `SELECT `+hostColumns+` FROM hosts ORDER BY origin`)
	if err != nil {
		return nil, mapErr(err, "list hosts")
	}
	hs, err := pgx.CollectRows(rows, scanHost)
	if err != nil {
		return nil, mapErr(err, "list hosts")
	}
	return hs, nil
}

// Host returns one origin's state; ENOTFOUND when it never deferred runs
// or failed.
func (db *DB) Host(ctx context.Context, origin string) (chronos.Host, error) {
	rows, err := db.Pool.Query(ctx, `SELECT `+hostColumns+` FROM hosts WHERE origin = $1`, origin)
	if err != nil {
		return chronos.Host{}, mapErr(err, "get host")
	}
	h, err := pgx.CollectExactlyOneRow(rows, scanHost)
	if err != nil {
		return chronos.Host{}, mapErr(err, "get host")
	}
	return h, nil
}

// TroubledHosts lists the origins with failures counted or an open
// breaker: an instance reports answers from these (to end the count or
// close the breaker) and not from any other. held says whether any origin
// holds runs back (or did until a moment ago): only then is SweepHosts
// worth its transaction. One statement, a scan of a table of a handful of
// rows: what an idle instance pays for all this each second.
func (db *DB) TroubledHosts(ctx context.Context) (troubled []string, held bool, err error) {
	rows, err := db.Pool.Query(ctx, `
		SELECT origin, consecutive_failures > 0 OR opened_at IS NOT NULL, held_until IS NOT NULL
		  FROM hosts WHERE consecutive_failures > 0 OR opened_at IS NOT NULL OR held_until IS NOT NULL`)
	if err != nil {
		return nil, false, mapErr(err, "list troubled hosts")
	}
	var (
		origin      string
		bad, isHeld bool
	)
	_, err = pgx.ForEachRow(rows, []any{&origin, &bad, &isHeld}, func() error {
		if bad {
			troubled = append(troubled, origin)
		}
		held = held || isHeld
		return nil
	})
	if err != nil {
		return nil, false, mapErr(err, "list troubled hosts")
	}
	return troubled, held, nil
}
