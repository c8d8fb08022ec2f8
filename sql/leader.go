package sql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// leaderKey is the leadership advisory lock ("chronos" in ASCII). Advisory
// locks are per database, so instances on one database share one leader.
const leaderKey = advisoryKey(0x0063_6872_6f6e_6f73)

// advisoryKey is a bigint advisory lock key, which pg_locks shows split in
// two oids: classid, the high half, and objid, the low.
type advisoryKey int64

func (k advisoryKey) classID() uint32 { return uint32(k >> 32) }
func (k advisoryKey) objID() uint32   { return uint32(k & 0xffffffff) }

// LeaderConn is the dedicated connection (not pooled) on which an instance
// holds the leadership advisory lock: the lock lives and dies with it.
type LeaderConn struct {
	Conn    *pgx.Conn
	tooOld  error  // set by mayLead
	compat  Compat // the schema's minimum as mayLead read it
	evicted string // set by evictOutdatedLeader
}

// ConnectLeader opens the dedicated leadership connection, with
// application_name = instance so Leader can name the holder.
func ConnectLeader(ctx context.Context, dsn, instance string) (*LeaderConn, error) {
	cfg, err := connConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("connect leader: %w", err)
	}
	if instance != "" {
		cfg.RuntimeParams["application_name"] = instance
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect leader: %w", err)
	}
	if err := holdLeaderMarker(ctx, conn); err != nil {
		return nil, errors.Join(fmt.Errorf("connect leader: %w", err), conn.Close(ctx))
	}
	return &LeaderConn{Conn: conn}, nil
}

// TryLock tries for the leadership lock without waiting. It reports false,
// without trying, when this binary is older than the schema allows to
// lead (see Compat; TooOld says so afterwards), and an error when the
// connection does not reach a session of its own (a transaction pooler
// between: the lock would stay behind on a server session the pooler
// hands to others).
//
// Session advisory locks stack: taking one twice needs two unlocks. TryLock
// therefore reports an already-held lock as held without taking it again,
// so a single Unlock always lets go.
func (c *LeaderConn) TryLock(ctx context.Context) (bool, error) {
	if ok, err := c.mayLead(ctx); !ok || err != nil {
		return false, err
	}
	var ok bool
	var pid uint32
	err := c.Conn.QueryRow(ctx, `
		SELECT pg_backend_pid(),
		       CASE WHEN pg_backend_pid() <> $4 THEN false
		            WHEN EXISTS (SELECT 1 FROM pg_locks
		                          WHERE pid = pg_backend_pid() AND locktype = 'advisory' AND granted
		                            AND classid = $2 AND objid = $3 AND objsubid = 1)
		            THEN true
		            ELSE pg_try_advisory_lock($1) END`, leaderKey, leaderKey.classID(), leaderKey.objID(), int64(c.Conn.PgConn().PID())).Scan(&pid, &ok)
	if err != nil {
		return false, fmt.Errorf("try leader lock: %w", err)
	}
	if pid != c.Conn.PgConn().PID() {
		return false, ErrPooledLeaderConn
	}
	if !ok {
		// The holder may be a binary too old to step down by itself: end
		// its session, and the follower's wait (WaitLock) takes the lock.
		return false, c.evictOutdatedLeader(ctx, c.compat)
	}
	return ok, nil
}

// ErrPooledLeaderConn: the leader's connection goes through a pooler.
var ErrPooledLeaderConn = errors.New("the leader's connection reaches no session of its own " +
	"(its backend pid is not the one the server announced): DATABASE_DIRECT_URL must reach Postgres itself, not a transaction pooler")

// mayLead reads the schema's minimum and tells whether this binary may
// lead; TooOld keeps the reason.
func (c *LeaderConn) mayLead(ctx context.Context) (bool, error) {
	compat, err := readCompat(ctx, c.Conn)
	if err != nil {
		return false, fmt.Errorf("leader: %w", err)
	}
	c.compat = compat
	c.tooOld = compat.Check(SchemaLevel())
	return c.tooOld == nil, nil
}

// TooOld is the *TooOldError that kept this connection from leading at
// its last try or ping, or nil.
func (c *LeaderConn) TooOld() error { return c.tooOld }

// Ping checks the connection, and that this binary may still lead (a
// migration may have raised the minimum); a leader steps down when it
// fails.
func (c *LeaderConn) Ping(ctx context.Context) error {
	ok, err := c.mayLead(ctx)
	if err != nil {
		return fmt.Errorf("ping leader connection: %w", err)
	}
	if !ok {
		return fmt.Errorf("ping leader connection: %w", c.tooOld)
	}
	return nil
}

// Unlock releases the lock. It is an error when the lock was not held.
func (c *LeaderConn) Unlock(ctx context.Context) error {
	var released bool
	if err := c.Conn.QueryRow(ctx, "SELECT pg_advisory_unlock($1)", leaderKey).Scan(&released); err != nil {
		return fmt.Errorf("release leader lock: %w", err)
	}
	if !released {
		return fmt.Errorf("release leader lock: not held by this connection")
	}
	return nil
}

// Close closes the connection (releasing the lock if still held).
func (c *LeaderConn) Close(ctx context.Context) error {
	if err := c.Conn.Close(ctx); err != nil {
		return fmt.Errorf("close leader connection: %w", err)
	}
	return nil
}

// AnnounceResignation tells followers (channel chronos_leader) that
// instance has let go of the lock, so they try at once.
func (db *DB) AnnounceResignation(ctx context.Context, instance string) error {
	payload, err := json.Marshal(map[string]string{"op": "resigned", "instance": instance})
	if err != nil {
		return fmt.Errorf("announce resignation: %w", err)
	}
	if _, err := db.Pool.Exec(ctx, "SELECT pg_notify('chronos_leader', $1)", string(payload)); err != nil {
		return fmt.Errorf("announce resignation: %w", err)
	}
	return nil
}

// Leader names the instance holding the leadership lock ("" when none).
func (db *DB) Leader(ctx context.Context) (string, error) {
	var name string
	err := db.Pool.QueryRow(ctx, `
		SELECT COALESCE((
			SELECT a.application_name
			  FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			 WHERE l.locktype = 'advisory' AND l.granted
			   AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
			   AND l.classid = $1 AND l.objid = $2 AND l.objsubid = 1
			 LIMIT 1), '')`, leaderKey.classID(), leaderKey.objID()).Scan(&name)
	if err != nil {
		return "", fmt.Errorf("find leader: %w", err)
	}
	return name, nil
}
