package bench

import (
	"context"
	"fmt"
	"time"
)

// The setup the scenarios that drive a cluster share, and the retry of the
// scenarios whose jobs must exist before one instant.

// clusterEnv is a fresh world (newEnv) with Config.Instances instances
// started with opts and, with leader, one of them leading. The caller
// closes it.
func (b *runner) clusterEnv(ctx context.Context, opts instanceOpts, leader bool) (*env, error) {
	return b.clusterEnvOf(ctx, b.cfg.Instances, opts, leader)
}

// clusterEnvOf is clusterEnv with n instances, for a scenario whose shape
// fixes their number (limit-rate: at least two).
func (b *runner) clusterEnvOf(ctx context.Context, n int, opts instanceOpts, leader bool) (*env, error) {
	e, err := b.newEnv(ctx)
	if err != nil {
		return nil, err
	}
	err = e.startInstances(ctx, n, opts)
	if err == nil && leader {
		err = e.waitLeader(ctx)
	}
	if err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

// clusterParams records the cluster's shape, after a scenario's own
// parameters: instances, their concurrency and GOMAXPROCS, and whether
// commits are asynchronous.
func (r *result) clusterParams(f *Config) {
	r.param("instances", f.Instances)
	r.param("concurrency", f.Concurrency)
	r.param("procs", f.Procs)
	r.param("async_commit", f.AsyncCommit)
	if f.TargetDelay > 0 {
		r.param("target_delay", f.TargetDelay.String())
	}
}

// world is the kind of env a scenario runs in.
type world int

const (
	bare       world = iota // newEnv: a database and the target, no instance
	cluster                 // clusterEnv with default instance options
	ledCluster              // cluster with one instance leading
)

// envScenario is the body of a scenario in a world made for it (which it
// does not close); f is the runner's Config.
type envScenario func(ctx context.Context, e *env, f Config) (*result, error)

// scenarioIn is a scenario that runs body in a fresh world w, closed when
// body returns: the setup every such scenario shares, in one place.
func scenarioIn(w world, body envScenario) func(context.Context, *runner) (*result, error) {
	return func(ctx context.Context, b *runner) (*result, error) {
		var e *env
		var err error
		if w == bare {
			e, err = b.newEnv(ctx)
		} else {
			e, err = b.clusterEnv(ctx, instanceOpts{}, w == ledCluster)
		}
		if err != nil {
			return nil, err
		}
		defer e.close()
		return body(ctx, e, b.cfg)
	}
}

// The scenarios that need only a fresh world of their own, and which one;
// each one's body (runX) is in the file named for it.
var (
	benchThroughput = scenarioIn(cluster, runThroughput)
	benchLatency    = scenarioIn(cluster, runLatency)
	benchSchedule   = scenarioIn(ledCluster, runSchedule)
	benchIdle       = scenarioIn(bare, runIdle)
	benchScale      = scenarioIn(bare, runScale)
	benchCreate     = scenarioIn(cluster, runCreate)
)

// dueAttempt is one attempt of a scenario whose jobs must all exist
// before the instant they are due at, in a fresh ledCluster world; need
// is how long making them is known to take (0: estimate it). A nil result
// with a nil error means making them ran too close to that instant; took
// says how long it took.
type dueAttempt func(ctx context.Context, e *env, f Config, need time.Duration) (res *result, took time.Duration, err error)

// retryDue runs once up to attempts times, each time in a fresh world
// with half again the time the last attempt took; what names the making
// of the jobs (e.g. "creating the jobs") in scenario's progress line and
// in the error.
func retryDue(ctx context.Context, b *runner, scenario, what string, attempts int, once dueAttempt) (*result, error) {
	var need, took time.Duration
	attempt := scenarioIn(ledCluster, func(ctx context.Context, e *env, f Config) (res *result, err error) {
		res, took, err = once(ctx, e, f, need)
		return res, err
	})
	for range attempts {
		res, err := attempt(ctx, b)
		if err != nil || res != nil {
			return res, err
		}
		b.progress("%s: %s took %s, too close to their due instant: again with more time", scenario, what, took.Round(time.Millisecond))
		need = took * 3 / 2
	}
	return nil, fmt.Errorf("%s overran their due instant %d times", what, attempts)
}
