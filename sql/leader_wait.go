package sql

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// WaitLock waits up to timeout for the leadership lock. A follower waiting
// in the server's lock queue is handed the lock the instant the holder's
// session ends, kill -9 included, instead of finding out at its next poll.
// It reports false, without error, when the timeout passed first.
//
// Only a connection that does not hold the lock may wait: session advisory
// locks stack, and a second grant would need a second unlock.
//
// A binary older than the schema allows to lead (see TryLock) does not
// queue: it waits out timeout here and reports false.
func (c *LeaderConn) WaitLock(ctx context.Context, timeout time.Duration) (bool, error) {
	if ok, err := c.mayLead(ctx); err != nil || !ok {
		if err != nil {
			return false, err
		}
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-t.C:
			return false, nil
		}
	}
	// Queue behind an outdated leader only after ending its session: it
	// would otherwise lead on, blind to the schema's rules.
	if err := c.evictOutdatedLeader(ctx, c.compat); err != nil {
		return false, err
	}
	ms := timeout.Milliseconds()
	if ms < 1 {
		ms = 1
	}
	b := &pgx.Batch{}
	// lock_timeout bounds the wait server-side, so the statement always
	// ends by itself and never needs cancelling with the outcome unknown.
	b.Queue("SELECT set_config('lock_timeout', $1, false)", strconv.FormatInt(ms, 10))
	b.Queue("SELECT pg_advisory_lock($1)", leaderKey)
	b.Queue("SELECT set_config('lock_timeout', '0', false)")
	res := c.Conn.SendBatch(ctx, b)
	_, err1 := res.Exec()
	_, err2 := res.Exec()
	_, err3 := res.Exec()
	errClose := res.Close()
	if err := errors.Join(err1, err2, err3, errClose); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err2, &pgErr) && pgErr.Code == "55P03" { // lock_not_available
			// The batch is one implicit transaction: its failure rolled
			// the session's lock_timeout back to what it was.
			return false, nil
		}
		return false, fmt.Errorf("wait for leader lock: %w", err)
	}
	return true, nil
}
