package reactor

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/chronoshq/chronos/sql"
)

// renewer keeps one lease alive while its HTTP call is in flight: every
// interval it extends the lease by d. When the database says the lease is
// gone it calls lost (which cancels the call) and stops. It uses a timer
// rather than a goroutine, so the common case, a call shorter than the
// interval, costs nothing.
type renewer struct {
	db       *sql.DB
	log      *slog.Logger
	lease    sql.Lease
	interval time.Duration
	d        time.Duration
	lost     func(error)

	mu      sync.Mutex
	stopped bool
	timer   *time.Timer
	wg      sync.WaitGroup // a renewal in progress
}

func startRenewer(db *sql.DB, log *slog.Logger, l sql.Lease, d time.Duration, lost func(error)) *renewer {
	r := &renewer{db: db, log: log, lease: l, interval: d / 3, d: d, lost: lost}
	if r.interval <= 0 {
		r.interval = time.Second
	}
	r.mu.Lock()
	r.timer = time.AfterFunc(r.interval, r.renew)
	r.mu.Unlock()
	return r
}

func (r *renewer) renew() {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return
	}
	r.wg.Add(1)
	r.mu.Unlock()
	defer r.wg.Done()

	ctx, cancel := context.WithTimeout(context.Background(), r.interval)
	err := r.db.Renew(ctx, r.lease, r.d)
	cancel()
	if errors.Is(err, sql.ErrLeaseLost) {
		r.lost(err)
		return
	}
	if err != nil {
		// Keep trying: the lease is still ours until it expires, and the
		// next renewal may get through.
		r.log.Warn("renew lease failed", "run_id", r.lease.RunID, "attempt", r.lease.Attempt, "err", err)
	}
	r.mu.Lock()
	if !r.stopped {
		r.timer.Reset(r.interval)
	}
	r.mu.Unlock()
}

// stop ends the renewals and waits for one in progress.
func (r *renewer) stop() {
	r.release()
	r.wg.Wait()
}

// release ends the renewals without waiting for one in progress: the
// completer calls it once the outcome is recorded, and must not stall on a
// renewal round trip. A renewal that lands after the record finds the
// lease gone and stops by itself.
func (r *renewer) release() {
	r.mu.Lock()
	r.stopped = true
	r.timer.Stop()
	r.mu.Unlock()
}
