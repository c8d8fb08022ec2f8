package sql

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
//
// The leases themselves move in_flight and tokens, through the trigger on
// job_runs, in this statement and under these locks. A key with no row
// (deleted while its runs waited) is no limit. A run granted room that the
// job's overlap lock then refuses stays pending, unheld: it took nothing.
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
