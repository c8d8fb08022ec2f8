package reactor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/chronoshq/chronos/bus"
	"github.com/chronoshq/chronos/sql"
)

// Reactor is one instance's engine: the dispatcher and its workers, and the
// leader-only loops. Create it with New and start it with Run, once.
type Reactor struct {
	cfg    Config
	db     *sql.DB
	bus    *bus.Bus
	log    *slog.Logger
	leader *Leader
	exec   *executor
	disp   *dispatcher
	comp   *completer
	starts *starter
	hosts  *hostTracker
	// origins remembers each target URL's origin (hosts.go keys by it)
	// so that a delivery does not parse its URL again.
	origins originCache
	// bulk keeps slow origins from the last worker slots (bulkhead.go).
	bulk *bulkhead

	// hard is cancelled when shutdown runs out of grace: it cancels the
	// HTTP calls still in flight. Set by Run before any worker starts.
	hard context.Context
}

// New returns a reactor for the database db, publishing on b. Zero fields
// of cfg take their defaults (see Config).
func New(cfg Config, db *sql.DB, b *bus.Bus, log *slog.Logger) *Reactor {
	cfg = cfg.withDefaults()
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "reactor", "instance", cfg.Instance)
	r := &Reactor{cfg: cfg, db: db, bus: b, log: log}
	r.leader = NewLeader(LeaderConfig{DSN: cfg.DSN, Instance: cfg.Instance, PollInterval: cfg.LeaderPollInterval}, db, b, log)
	r.exec = newExecutor(cfg)
	r.disp = newDispatcher(r)
	// The queue holds a batch's worth per worker, so workers hand off
	// without waiting while a batch is written.
	r.comp = newCompleter(db, b, log, cfg.Instance, max(completeMaxBatch, 2*cfg.WorkerConcurrency), r.disp.hint)
	r.comp.clock = r.now
	r.starts = newStarter(db, cfg.WorkerConcurrency)
	r.hosts = newHostTracker(r)
	reserve := cfg.Hosts.SlotReserve
	if reserve == 0 {
		reserve = max(1, cfg.WorkerConcurrency/defaultReserveDivisor)
	}
	r.bulk = newBulkhead(cfg.WorkerConcurrency, reserve, cfg.Hosts.SlowCall)
	return r
}

// now is this instance's own clock (skewed by Config.ClockSkew). It arms
// timers only; scheduling decisions read the database's clock.
func (r *Reactor) now() time.Time { return time.Now().Add(r.cfg.ClockSkew) }

// IsLeader reports whether this instance currently leads.
func (r *Reactor) IsLeader() bool { return r.leader.IsLeader() }

// Instance is the name this reactor leases runs under.
func (r *Reactor) Instance() string { return r.cfg.Instance }

// Run runs the dispatcher and the Leader until ctx ends, then shuts down in
// order: stop claiming; give in-flight calls ShutdownTimeout to finish;
// cancel the rest and hand their runs back to pending; write the queued
// outcomes; let the Leader resign. It returns once all of that is done,
// with the Leader's error, if any (a Leader failure also stops the reactor,
// so the process can exit and be restarted).
func (r *Reactor) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hard, cancelHard := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelHard()
	r.hard = hard

	r.log.Info("reactor starting", "worker_concurrency", r.cfg.WorkerConcurrency,
		"idle_poll_interval", r.cfg.IdlePollInterval, "lease_duration", r.cfg.LeaseDuration)

	compDone := make(chan struct{})
	go func() {
		defer close(compDone)
		r.comp.run()
	}()
	startsDone := make(chan struct{})
	go func() {
		defer close(startsDone)
		r.starts.run()
	}()
	alertsDone := make(chan struct{})
	go func() {
		defer close(alertsDone)
		newAlerter(r).run(ctx)
	}()
	hostsDone := make(chan struct{})
	go func() {
		defer close(hostsDone)
		r.hosts.run(ctx)
	}()
	leaderDone := make(chan error, 1)
	go func() {
		err := r.leader.Run(ctx, r.leaderWork)
		if err != nil && ctx.Err() == nil {
			r.log.Error("leader stopped", "err", err)
			cancel()
		}
		leaderDone <- err
	}()

	r.disp.run(ctx)

	// Stopped claiming. Give the deliveries in flight their grace.
	poolDone := make(chan struct{})
	go func() {
		defer close(poolDone)
		r.disp.wait()
	}()
	grace := time.NewTimer(r.cfg.ShutdownTimeout)
	select {
	case <-poolDone:
		grace.Stop()
	case <-grace.C:
		r.log.Warn("shutdown timeout: cancelling deliveries in flight", "timeout", r.cfg.ShutdownTimeout)
		cancelHard()
		<-poolDone
	}
	// Every worker has handed off its outcome: write them all.
	r.starts.close()
	<-startsDone
	close(r.comp.in)
	<-compDone
	<-alertsDone
	<-hostsDone
	r.exec.close()

	err := <-leaderDone
	r.log.Info("reactor stopped")
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("leader: %w", err)
	}
	return nil
}
