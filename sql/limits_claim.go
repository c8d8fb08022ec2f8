package sql

import "strings"

// limitClaimCTEs are the claim's limit check (see claimSQL), between the
// runs it picked and the runs it leases (migration 034):
//
//   - limit_locked locks the limits rows of the keys picked, in key order
//     (the order every writer of limits locks them in, so claims and the
//     leader's release never deadlock), and reads their cap and tokens as
//     the last committed writer left them, beside the runs the claim
//     wants of each (limit_picked);
//   - limit_counted counts each capped key's runs leased or running with
//     chronos_limit_counts, once every lock is granted (its argument reads
//     all of limit_locked first). The function is VOLATILE PL/pgSQL: its
//     query takes a snapshot of its own, not this statement's, so it sees
//     every lease committed by a claim this one waited for; and every claim
//     that leases a run of a key holds the key's lock until it commits. So
//     the count is exact, with no bound to keep and no key row to write:
//     one range of job_runs_limit_in_flight_idx a partition and key, the
//     key's runs in flight;
//   - limit_rows is each key's room (its free slots and whole tokens),
//     kept only for the keys with less room than the claim wants of them;
//     those keys and the keys with a rate are the ones limit_ranked and
//     limit_taken look at again;
//   - limit_ranked are the picked runs of those keys, each marked over
//     when it is past its key's room, oldest first within a key; over_limit
//     are those. A key with room for all it was picked for needs neither,
//     which is a burst's every key: its runs are not sorted or looked at
//     again. A key with no row (deleted while its runs waited) is no limit;
//   - limit_held holds them (held, limit_held): out of the claimable
//     index, they cost later claims nothing until a completion of the key
//     (completeSQL) or the leader (chronos_limit_release) releases them.
//
// The counts and the rooms are each one jsonb object keyed by the limit
// key, read by key, not CTEs joined on it: the claim runs with hash and
// merge joins off (QueryPlannedOnce), and as joins they were nested loops
// of every key by every key and every picked run by every key. A burst's
// claim of 100 runs over 100 keys spent about 5 ms in them, more than the
// claim's own walk and writes (a limited burst ran at 59-73 % of an
// unlimited one in bench limits; BenchmarkLimitedClaimComplete). For the
// same reason limit_taken counts from limit_ranked's marks rather than
// joining the picked runs with over_limit.
var limitClaimCTEs = `limit_picked AS (
		SELECT limit_key AS key, count(*)::integer AS n FROM picked WHERE limit_key IS NOT NULL GROUP BY limit_key
	), limit_locked AS MATERIALIZED (
		SELECT l.key, p.n AS want, l.max_concurrency AS cap, l.rate IS NOT NULL AS rated,
		       coalesce(floor(chronos_limit_tokens(l, clock_timestamp()))::integer, 1000000) AS tokens
		  FROM limit_picked p JOIN limits l ON l.key = p.key
		 ORDER BY l.key
		   FOR UPDATE OF l
	), limit_counted AS (
		SELECT jsonb_object_agg(c.key, c.n) AS n
		  FROM chronos_limit_counts(ARRAY(SELECT k.key FROM limit_locked k WHERE k.cap IS NOT NULL)) c
	), limit_rows AS (
		SELECT jsonb_object_agg(k.key, k.room) FILTER (WHERE k.room < k.want) AS room,
		       array_agg(k.key) FILTER (WHERE k.room < k.want OR k.rated) AS keys
		  FROM (SELECT k.key, k.want, k.rated,
		               greatest(0, least(coalesce(k.cap - ((SELECT n FROM limit_counted) ->> k.key)::integer, 1000000), k.tokens)) AS room
		          FROM limit_locked k) k
	), limit_ranked AS (
		SELECT p.id, p.scheduled_at, p.limit_key, p.exclusive,
		       row_number() OVER (PARTITION BY p.limit_key ORDER BY p.available_at, p.id)
		         > coalesce(((SELECT room FROM limit_rows) ->> p.limit_key)::integer, 1000000) AS over
		  FROM picked p
		 WHERE p.limit_key = ANY ((SELECT keys FROM limit_rows)::text[])
	), over_limit AS (
		SELECT id, scheduled_at, limit_key FROM limit_ranked WHERE over
	), ` + limitHeldCTE

// limitHoldCTEs end the limit check of the claim before migration 034
// (limitClaimCTEs028), from each key's room (limit_rows): over_limit are
// the picked runs past it, oldest first within a key, and limit_held
// holds them.
const limitHoldCTEs = `over_limit AS (
		SELECT id, scheduled_at, limit_key FROM (
			SELECT p.id, p.scheduled_at, p.limit_key, k.room,
			       row_number() OVER (PARTITION BY p.limit_key ORDER BY p.available_at, p.id) AS n
			  FROM picked p JOIN limit_rows k ON k.key = p.limit_key) ranked
		 WHERE n > room
	), ` + limitHeldCTE

// limitHeldCTE holds the runs of over_limit.
const limitHeldCTE = `limit_held AS (
		UPDATE job_runs r SET held = true, limit_held = true
		  FROM over_limit o
		 WHERE r.id = o.id AND r.scheduled_at = o.scheduled_at
	)`

// limitTakenCTE, after the overlap lock's CTE (locked), writes the row of
// each key of limit_ranked, under the lock limit_locked took: a key with
// less room than the claim wanted, which held runs (the held hint grows
// by them), or a key with a rate (a token goes for each run leased:
// exactly the picked runs neither over their limit nor refused the
// overlap lock, as leased leases all of those). The row of a key with
// only a cap, whose runs all had room, is not written, nor looked up
// again. A run granted room that the overlap lock then refuses stays
// pending, unheld: it took nothing.
const limitTakenCTE = `limit_taken AS (
		UPDATE limits l
		   SET held = l.held + t.h,
		       tokens = CASE WHEN l.rate IS NULL THEN 0 ELSE chronos_limit_tokens(l, clock_timestamp()) - t.n END,
		       refilled_at = CASE WHEN l.rate IS NULL THEN l.refilled_at ELSE clock_timestamp() END
		  FROM (SELECT p.limit_key,
		               (count(*) FILTER (WHERE p.over IS NOT TRUE
		                                   AND (NOT p.exclusive OR p.id IN (SELECT run_id FROM locked))))::integer AS n,
		               (count(*) FILTER (WHERE p.over))::integer AS h
		          FROM limit_ranked p
		         GROUP BY p.limit_key) t
		 WHERE l.key = t.limit_key
	)`

// limitClaimCTEs028 are the claim's limit check on a database before
// migration 034 (a rolling upgrade's new instance before the migration
// ran), between the runs it picked and the runs it leases:
//
//   - limit_locked locks the limits rows of the keys picked, in key order
//     (the order every writer of limits locks them in, so claims and the
//     leader's release never deadlock), and reads them as the last
//     committed writer left them: a claim that waited for another's lock
//     sees the in_flight and tokens that claim's leases left;
//   - limit_rows is each key's room: its free slots and whole tokens. A
//     key's in_flight is an upper bound of its runs leased or running
//     (only claims write it: a completion does not take its run off, see
//     migration 028). When that bound leaves too little room for the runs
//     picked, the claim counts the key's runs in flight instead, provided
//     the row it locked is the version its snapshot sees: then no claim
//     has leased runs of the key since that snapshot (each that does
//     writes the row), so the runs the snapshot sees leased or running are
//     all that can be, or more (a completion committed since is still
//     counted). Otherwise the bound stands, and a later claim counts. The
//     count walks job_runs_limit_idx over the key's runs in flight: at
//     most the key's max_concurrency entries, and only when the key is
//     (by its bound) near full. (OFFSET 0 keeps the planner from copying
//     base, and so the count, into each expression that uses it.)
//   - over_limit are the picked runs past their key's room, oldest first
//     within a key;
//   - limit_held holds them (held, limit_held): out of the claimable
//     index, they cost later claims nothing until a completion of the key
//     (completeSQL) or the leader (chronos_limit_release) releases them.
var limitClaimCTEs028 = `limit_picked AS (
		SELECT limit_key AS key, count(*)::integer AS n FROM picked WHERE limit_key IS NOT NULL GROUP BY limit_key
	), limit_locked AS MATERIALIZED (
		SELECT l.key, l.ctid AS at, l.max_concurrency AS cap, l.in_flight,
		       coalesce(floor(chronos_limit_tokens(l, clock_timestamp()))::integer, 1000000) AS tokens
		  FROM limits l
		 WHERE l.key IN (SELECT key FROM limit_picked)
		 ORDER BY l.key
		   FOR UPDATE OF l
	), limit_rows AS (
		SELECT k.key, b.base, greatest(0, least(coalesce(k.cap - b.base, 1000000), k.tokens)) AS room
		  FROM limit_locked k JOIN limit_picked p ON p.key = k.key,
		       LATERAL (SELECT CASE
		           WHEN k.cap IS NULL OR k.cap - k.in_flight >= least(p.n, k.tokens)
		             OR k.at IS DISTINCT FROM (SELECT s.ctid FROM limits s WHERE s.key = k.key)
		           THEN k.in_flight
		           ELSE ` + inFlightSQL028("k.key") + `
		       END AS base OFFSET 0) b
	), ` + limitHoldCTEs

// limitTakenCTE028, after the overlap lock's CTE (locked), writes each key's
// row once, under the lock limit_locked took: in_flight becomes the room's
// basis (the bound, or the count) plus the runs the claim leases (exactly
// the picked runs neither over their limit nor refused the overlap lock:
// leased leases all of those, as picked holds their row locks), a token
// goes for each, and the held hint grows by the runs it holds. A run
// granted room that the overlap lock then refuses stays pending, unheld:
// it took nothing. A key with no row (deleted while its runs waited) is
// no limit.
const limitTakenCTE028 = `limit_taken AS (
		UPDATE limits l
		   SET in_flight = k.base + t.n, held = l.held + t.h,
		       tokens = CASE WHEN l.rate IS NULL THEN 0 ELSE chronos_limit_tokens(l, clock_timestamp()) - t.n END,
		       refilled_at = CASE WHEN l.rate IS NULL THEN l.refilled_at ELSE clock_timestamp() END
		  FROM limit_rows k JOIN (
		       SELECT p.limit_key,
		              (count(*) FILTER (WHERE o.id IS NULL AND (NOT p.exclusive OR p.id IN (SELECT run_id FROM locked))))::integer AS n,
		              count(o.id)::integer AS h
		         FROM picked p LEFT JOIN over_limit o ON o.id = p.id AND o.scheduled_at = p.scheduled_at
		        WHERE p.limit_key IS NOT NULL
		        GROUP BY p.limit_key) t ON t.limit_key = k.key
		 WHERE l.key = k.key
	)`

// inFlightSQL counts the runs of the key key (an SQL expression) leased
// or running: one range of job_runs_limit_in_flight_idx (migration 033)
// a partition. The claim counts in chronos_limit_counts (migration 034),
// the same way.
func inFlightSQL(key string) string {
	return `(SELECT count(*) FROM job_runs r WHERE r.limit_key = ` + key + ` AND r.status IN ('leased', 'running'))::integer`
}

// inFlightSQL028 is inFlightSQL for a database before migration 033, one
// range of job_runs_limit_idx (limit_key, status, ...) per status: with
// status IN (...) the planner walked every entry of the key, its pending
// runs too (thousands, for a key holding a backlog), and filtered them.
func inFlightSQL028(key string) string {
	return `((SELECT count(*) FROM job_runs r WHERE r.limit_key = ` + key + ` AND r.status = 'leased') +
	         (SELECT count(*) FROM job_runs r WHERE r.limit_key = ` + key + ` AND r.status = 'running'))::integer`
}

// claimSQL028 is claimSQL for a database from migration 022 (limits) to
// 032: a new binary keeps delivering, and keeps the limits, while
// migration 034 is still to run or running, as an older one did.
var claimSQL028 = claimSQLWith(claimableOfJob(claimableBehind035), limitClaimCTEs028, limitTakenCTE028)

// claimSQLBeforeLimits is claimSQL without the limit check, for a
// database not yet migrated to 022 (limits).
var claimSQLBeforeLimits = strings.NewReplacer(
	", r.limit_key,", ",",
	"), "+limitClaimCTEs028+", locked AS (", "), locked AS (",
	" AND id NOT IN (SELECT id FROM over_limit)", "",
	"), "+limitTakenCTE028+", leased AS (", "), leased AS (",
	"\n\t\t   AND picked.id NOT IN (SELECT id FROM over_limit)", "",
).Replace(claimSQL028)

// beforeLimits reports whether err says the database lacks migration
// 022's columns (undefined column or table).
func beforeLimits(err error) bool {
	c := pgCode(err)
	return (c == "42703" || c == "42P01") && strings.Contains(err.Error(), "limit")
}
