package sql

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// leaderMarkerKey is held in share mode, for its whole session, by every
// leadership connection of a binary that reads the schema's minimum
// (chronos_compat) and steps down by itself when a migration raises it.
// A leader holding the leadership lock without the marker is a binary
// from before that rule: nothing tells it to step down, so followers end
// its session (evictOutdatedLeader). Share mode: markers never conflict.
const leaderMarkerKey = advisoryKey(0x0063_6872_6f6e_6f76)

// holdLeaderMarker takes the marker on a new leadership connection, before
// it can ever take the leadership lock.
func holdLeaderMarker(ctx context.Context, conn *pgx.Conn) error {
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock_shared($1)", leaderMarkerKey); err != nil {
		return fmt.Errorf("hold the leader marker: %w", err)
	}
	return nil
}

// evictOutdatedSQL ends the session holding the leadership lock when its
// binary cannot know the schema's minimum (no marker) and no instance of
// that name is registered at a level the schema lets lead. A registered
// binary of an allowed level keeps leading; one with the marker steps
// down by itself at its next ping. application_name is cut at 63 bytes:
// a name that long matches the registered names it begins.
const evictOutdatedSQL = `
SELECT a.application_name, pg_terminate_backend(l.pid)
  FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
 WHERE l.locktype = 'advisory' AND l.granted AND l.pid <> pg_backend_pid()
   AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
   AND l.classid = $1 AND l.objid = $2 AND l.objsubid = 1
   AND NOT EXISTS (SELECT 1 FROM pg_locks m
                    WHERE m.pid = l.pid AND m.locktype = 'advisory' AND m.granted
                      AND m.database = l.database
                      AND m.classid = $3 AND m.objid = $4 AND m.objsubid = 1)
   AND NOT EXISTS (SELECT 1 FROM chronos_instances i
                    WHERE i.schema_level >= $5 AND a.application_name <> ''
                      AND (i.instance = a.application_name
                           OR (octet_length(a.application_name) >= 63
                               AND starts_with(i.instance, a.application_name))))`

// evictOutdatedLeader ends the leadership session of a binary too old to
// step down by itself (see leaderMarkerKey), when the schema records a
// minimum (compat.MinLeadLevel > 0: from migration 017 on). Evicted tells
// whom. A role that may not end the holder's session (not the same role,
// nor pg_signal_backend) leaves it leading: Evicted says so.
func (c *LeaderConn) evictOutdatedLeader(ctx context.Context, compat Compat) error {
	if compat.MinLeadLevel <= 0 {
		return nil
	}
	var name string
	var ended bool
	err := c.Conn.QueryRow(ctx, evictOutdatedSQL, leaderKey.classID(), leaderKey.objID(),
		leaderMarkerKey.classID(), leaderMarkerKey.objID(), compat.MinLeadLevel).Scan(&name, &ended)
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case errors.As(err, &pgErr) && pgErr.Code == "42501": // insufficient_privilege
		c.evicted = fmt.Sprintf("%q (not ended: %s)", name, pgErr.Message)
		return nil
	case err != nil:
		return fmt.Errorf("end an outdated leader's session: %w", err)
	}
	if ended {
		c.evicted = fmt.Sprintf("%q", name)
	}
	return nil
}

// Evicted names the leader whose session this connection's last try
// ended because its binary was too old to step down by itself (or says
// why it could not), and forgets it; "" when none.
func (c *LeaderConn) Evicted() string {
	e := c.evicted
	c.evicted = ""
	return e
}
