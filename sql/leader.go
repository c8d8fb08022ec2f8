package sql

// SKELETON: signatures fixed by the lead; bodies to be implemented.

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// LeaderConn is the dedicated connection (not pooled) on which an instance
// holds the leadership advisory lock: the lock lives and dies with it.
type LeaderConn struct {
	Conn *pgx.Conn
}

// ConnectLeader opens the dedicated leadership connection, with
// application_name = instance so Leader can name the holder.
func ConnectLeader(ctx context.Context, dsn, instance string) (*LeaderConn, error) {
	return nil, errTODO
}

// TryLock tries for the leadership lock without waiting.
func (c *LeaderConn) TryLock(ctx context.Context) (bool, error) { return false, errTODO }

// Ping checks the connection; a leader steps down when it fails.
func (c *LeaderConn) Ping(ctx context.Context) error { return errTODO }

// Unlock releases the lock.
func (c *LeaderConn) Unlock(ctx context.Context) error { return errTODO }

// Close closes the connection (releasing the lock if still held).
func (c *LeaderConn) Close(ctx context.Context) error { return errTODO }

// AnnounceResignation tells followers (channel chronos_leader) that
// instance has let go of the lock, so they try at once.
func (db *DB) AnnounceResignation(ctx context.Context, instance string) error { return errTODO }

// Leader names the instance holding the leadership lock ("" when none).
func (db *DB) Leader(ctx context.Context) (string, error) { return "", errTODO }
