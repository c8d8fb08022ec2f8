package sql

import "strings"

// limitClaimCTEs are the claim's limit check (see claimSQL), between the
// runs it picked and the runs it leases:
//
//   - limit_rows locks the limits rows of the keys picked, in key order
//     (the order every writer of limits locks them in, so claims and the
//     completions' triggers never deadlock), and reads them as the last
//     committed writer left them: a claim that waited for another's lock
//     sees the in_flight and tokens that claim's leases left;
//   - over_limit are the picked runs past their key's room (free slots and
//     whole tokens, chronos_limit_room), oldest first within a key;
//   - limit_held holds them (held, limit_held): out of the claimable
//     index, they cost later claims nothing until a slot frees and the
//     completion's trigger releases one (migration 022).
const limitClaimCTEs = `limit_rows AS (
		SELECT l.key, chronos_limit_room(l) AS room
		  FROM limits l
		 WHERE l.key IN (SELECT limit_key FROM picked WHERE limit_key IS NOT NULL)
		 ORDER BY l.key
		   FOR UPDATE OF l
	), over_limit AS (
		SELECT id, scheduled_at FROM (
			SELECT p.id, p.scheduled_at, k.room,
			       row_number() OVER (PARTITION BY p.limit_key ORDER BY p.available_at, p.id) AS n
			  FROM picked p JOIN limit_rows k ON k.key = p.limit_key) ranked
		 WHERE n > room
	), limit_held AS (
		UPDATE job_runs r SET held = true, limit_held = true
		  FROM over_limit o
		 WHERE r.id = o.id AND r.scheduled_at = o.scheduled_at
	)`

// limitTakenCTE, after the overlap lock's CTE (locked), adds the runs the
// claim leases to their keys' in_flight and takes a token each, under the
// same locks: exactly the picked runs neither over their limit nor
// refused the overlap lock (leased leases all of those: picked holds
// their row locks). A run granted room that the overlap lock then refuses
// stays pending, unheld: it took nothing. A key with no row (deleted
// while its runs waited) is no limit. Runs leave in_flight through the
// triggers of migration 022, whatever statement takes them out.
const limitTakenCTE = `limit_taken AS (
		UPDATE limits l
		   SET in_flight = l.in_flight + t.n,
		       tokens = CASE WHEN l.rate IS NULL THEN 0 ELSE chronos_limit_tokens(l, clock_timestamp()) - t.n END,
		       refilled_at = CASE WHEN l.rate IS NULL THEN l.refilled_at ELSE clock_timestamp() END
		  FROM (SELECT limit_key, count(*) AS n FROM picked
		         WHERE limit_key IS NOT NULL AND id NOT IN (SELECT id FROM over_limit)
		           AND (NOT exclusive OR id IN (SELECT run_id FROM locked))
		         GROUP BY limit_key) t
		 WHERE l.key = t.limit_key
	)`

// claimSQLBeforeLimits is claimSQL without the limit check, for a
// database not yet migrated to 022 (limits): a new binary keeps
// delivering while the migration is still to run or running, as an
// older one did.
var claimSQLBeforeLimits = strings.NewReplacer(
	", r.limit_key,", ",",
	"), "+limitClaimCTEs+", locked AS (", "), locked AS (",
	" AND id NOT IN (SELECT id FROM over_limit)", "",
	"), "+limitTakenCTE+", leased AS (", "), leased AS (",
	"\n\t\t   AND picked.id NOT IN (SELECT id FROM over_limit)", "",
).Replace(claimSQL)

// beforeLimits reports whether err says the database lacks migration
// 022's columns (undefined column or table).
func beforeLimits(err error) bool {
	c := pgCode(err)
	return (c == "42703" || c == "42P01") && strings.Contains(err.Error(), "limit")
}
