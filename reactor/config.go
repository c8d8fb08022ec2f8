package reactor

import (
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/chronoshq/chronos"
)

// Config configures a Reactor. Zero values mean the defaults below.
type Config struct {
	DSN      string // the database, for the leader's dedicated connection
	Instance string // this instance's name: leased_by, application_name, events

	WorkerConcurrency  int           // HTTP calls in flight at once (32)
	IdlePollInterval   time.Duration // safety-net claim when nothing woke the dispatcher (3s)
	LeaseDuration      time.Duration // lease per claim, renewed every third of it (30s)
	LeaderPollInterval time.Duration // how often a follower tries for leadership (1s)
	ReaperInterval     time.Duration // how often the leader reclaims expired leases (5s)
	RunRetention       time.Duration // runs scheduled longer ago than this are dropped, a partition at a time (7 days)
	AuditRetention     time.Duration // audit history entries older than this are pruned (90 days)
	PruneInterval      time.Duration // how often the leader keeps the run partitions and prunes audit entries and idempotency keys (1m)
	ShutdownTimeout    time.Duration // grace for in-flight calls on shutdown (25s)
	Lookahead          time.Duration // runs are materialized this far ahead (2s)
	// ClaimAhead: runs due within this are claimed ahead of their instant
	// and sent at it (20ms; negative turns it off), so the claim's round
	// trip and commit are not part of a scheduled run's delay.
	ClaimAhead         time.Duration
	QueueStatsInterval time.Duration // how often the leader recomputes the queue gauges (5s)

	// ClockSkew shifts this instance's own clock (testing only: it stands
	// for a machine whose clock is off). The own clock only arms timers;
	// what is due is always decided by the database's clock.
	ClockSkew time.Duration

	SigningSecret       string // signs deliveries of jobs without their own secret (whsec_<base64> or any string)
	AllowPrivateTargets bool   // allow every special-purpose address but metadata endpoints

	// AllowedTargetNetworks are special-purpose ranges deliveries may
	// reach nonetheless (never a metadata endpoint).
	AllowedTargetNetworks []netip.Prefix

	Alerts AlertConfig // dead-run alerts (alerter.go)

	Hosts HostConfig // host back-pressure and the circuit breaker (hosts.go)
}

// TargetPolicy is the outbound address policy the configuration asks for.
func (c Config) TargetPolicy() chronos.TargetPolicy {
	return chronos.TargetPolicy{AllowPrivate: c.AllowPrivateTargets, AllowedNetworks: c.AllowedTargetNetworks}
}

// Defaults of Config.
const (
	DefaultWorkerConcurrency  = 32
	DefaultIdlePollInterval   = 3 * time.Second
	DefaultLeaseDuration      = 30 * time.Second
	DefaultLeaderPollInterval = time.Second
	DefaultReaperInterval     = 5 * time.Second
	DefaultRunRetention       = 7 * 24 * time.Hour
	DefaultAuditRetention     = 90 * 24 * time.Hour
	DefaultPruneInterval      = time.Minute
	DefaultShutdownTimeout    = 25 * time.Second
	DefaultLookahead          = 2 * time.Second
	DefaultClaimAhead         = 20 * time.Millisecond
	DefaultQueueStatsInterval = 5 * time.Second
)

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	if c.Instance == "" {
		host, _ := os.Hostname()
		c.Instance = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if c.WorkerConcurrency <= 0 {
		c.WorkerConcurrency = DefaultWorkerConcurrency
	}
	if c.IdlePollInterval <= 0 {
		c.IdlePollInterval = DefaultIdlePollInterval
	}
	if c.LeaseDuration <= 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.LeaderPollInterval <= 0 {
		c.LeaderPollInterval = DefaultLeaderPollInterval
	}
	if c.ReaperInterval <= 0 {
		c.ReaperInterval = DefaultReaperInterval
	}
	if c.RunRetention <= 0 {
		c.RunRetention = DefaultRunRetention
	}
	if c.AuditRetention <= 0 {
		c.AuditRetention = DefaultAuditRetention
	}
	if c.PruneInterval <= 0 {
		c.PruneInterval = DefaultPruneInterval
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.Lookahead <= 0 {
		c.Lookahead = DefaultLookahead
	}
	switch {
	case c.ClaimAhead == 0:
		c.ClaimAhead = DefaultClaimAhead
	case c.ClaimAhead < 0:
		c.ClaimAhead = 0
	}
	if c.QueueStatsInterval <= 0 {
		c.QueueStatsInterval = DefaultQueueStatsInterval
	}
	c.Hosts = c.Hosts.withDefaults()
	return c
}
