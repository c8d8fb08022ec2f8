package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chronoshq/chronos/internal/pgdsn"
)

// instance is one chronos instance the bench started.
type instance interface {
	name() string
	url() string
	pid() int // the process whose RSS and CPU it is
	isLeader(ctx context.Context) bool
	stop() error
}

// instanceOpts are a scenario's settings for its instances.
type instanceOpts struct {
	child     bool          // a child process even without --procs (idle)
	retention time.Duration // RUN_RETENTION (0: the default)
}

// startInstances starts n instances (in-process, or child processes with
// --procs or opts.child) and waits until each is ready. With --statements
// they reach Postgres through a counting proxy.
func (e *env) startInstances(ctx context.Context, n int, opts instanceOpts) error {
	dsn := e.dsn
	if e.b.cfg.Statements {
		hostPort, err := dsnHostPort(e.dsn)
		if err != nil {
			return fmt.Errorf("--statements: %w", err)
		}
		if e.proxy, err = startCountingProxy(hostPort); err != nil {
			return err
		}
		dsn = pgdsn.WithHost(e.dsn, e.proxy.addr())
	}
	for i := range n {
		name := fmt.Sprintf("bench-%d", i+1)
		in, err := e.startInstance(ctx, dsn, name, opts)
		if err != nil {
			return fmt.Errorf("start instance %s: %w", name, err)
		}
		e.insts = append(e.insts, in)
	}
	return nil
}

// startInstance starts one instance on dsn.
func (e *env) startInstance(ctx context.Context, dsn, name string, opts instanceOpts) (instance, error) {
	if opts.child || e.b.cfg.Procs {
		return startChild(ctx, e.b, dsn, name, opts)
	}
	return startInProcess(ctx, e.b, dsn, name, opts)
}

// waitLeader waits until one of the instances leads.
func (e *env) waitLeader(ctx context.Context) error {
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		for _, in := range e.insts {
			if in.isLeader(ctx) {
				return nil
			}
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
	return errors.New("no instance became leader within 15s")
}
