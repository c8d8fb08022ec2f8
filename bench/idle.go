package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/chronoshq/chronos/internal/pgdsn"
	"github.com/chronoshq/chronos/reactor"
)

// idleSettle is how long an idle instance runs before the measurement
// starts: startup (first claims, first ticks, pool warm-up) is not idle.
const idleSettle = 3 * time.Second

// runIdle is the idle scenario: one instance with nothing to do. How many
// statements it makes Postgres run per second (pg_stat_statements when the
// server preloads it, else the transactions pg_stat_database counts for
// the database), what they are (a counting proxy between the instance and
// Postgres), and its RSS. The instance is a child process when a chronos
// binary is at hand: an in-process RSS would be the bench's own.
func runIdle(ctx context.Context, e *env, f Config) (*result, error) {
	res := &result{Scenario: "idle"}
	res.param("seconds", f.Idle.Seconds())

	instanceDSN := e.dsn
	var proxy *countingProxy
	if hostPort, err := dsnHostPort(e.dsn); err == nil {
		if proxy, err = startCountingProxy(hostPort); err != nil {
			return nil, err
		}
		defer proxy.close()
		instanceDSN = pgdsn.WithHost(e.dsn, proxy.addr())
	} else {
		res.note("no statement breakdown: %v", err)
	}
	child := childBinary(f.Binary)
	res.param("child_process", child)
	var in instance
	var err error
	if child {
		in, err = startChild(ctx, e.b, instanceDSN, "bench-idle", instanceOpts{})
	} else {
		res.note("in-process instance (no chronos binary: pass --binary): the RSS is the bench's own")
		in, err = startInProcess(ctx, e.b, instanceDSN, "bench-idle", instanceOpts{})
	}
	if err != nil {
		return nil, fmt.Errorf("start idle instance: %w", err)
	}
	e.insts = append(e.insts, in)
	if err := e.waitLeader(ctx); err != nil {
		return nil, err
	}
	// The bench's own pool goes quiet: every query from here on is the
	// instance's, or the sampling below.
	e.db.Pool.Reset()
	if err := sleepCtx(ctx, idleSettle); err != nil {
		return nil, err
	}

	sampler, err := newStatSampler(ctx, e)
	if err != nil {
		return nil, err
	}
	defer sampler.close()
	before, err := sampler.sample(ctx)
	if err != nil {
		return nil, err
	}
	if proxy != nil {
		proxy.take()
	}
	start := time.Now()
	if err := sleepCtx(ctx, f.Idle); err != nil {
		return nil, err
	}
	after, err := sampler.sample(ctx)
	if err != nil {
		return nil, err
	}
	secs := time.Since(start).Seconds()
	delta := after - before - sampler.own
	res.param("source", sampler.source)
	res.metric("db_per_s", delta/secs, sampler.unit+"/s")
	res.metric("db_per_idle_poll", delta/secs*reactor.DefaultIdlePollInterval.Seconds(), sampler.unit)
	if proxy != nil {
		counts := proxy.take()
		total, nonLeader := 0, 0
		for k, n := range counts {
			total += n
			switch stmtClass(k.Query) {
			case "ping", "leader_trylock", "leader_lookup", "materialize_due", "materialize_unscheduled",
				"materialize_advance", "reap", "prune", "begin/commit":
			default:
				nonLeader += n
			}
		}
		res.metric("statements_per_s", float64(total)/secs, "stmts/s")
		res.metric("non_leader_per_idle_poll", float64(nonLeader)/secs*reactor.DefaultIdlePollInterval.Seconds(), "stmts")
		res.Notes = append(res.Notes, "statements in "+strconv.FormatFloat(secs, 'f', 1, 64)+"s: "+strings.Join(breakdown(counts, in.name()), ", "))
	}
	rss, peak, err := rssKiB(in.pid())
	if err != nil {
		return nil, fmt.Errorf("read RSS: %w", err)
	}
	res.metric("rss", float64(rss)/1024, "MiB")
	res.metric("rss_peak", float64(peak)/1024, "MiB")
	return res, nil
}
