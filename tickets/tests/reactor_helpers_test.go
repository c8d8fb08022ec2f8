package tests

import (
	"testing"
	"time"

	"github.com/chronoshq/chronos/reactor"
	"github.com/chronoshq/chronos/reactor/reactortest"
)

// The reactor tickets' helpers live in reactor/reactortest, shared with
// the reactor's own tests; these are the names the tickets call them by.
var (
	rxEventually = reactortest.Eventually
	rxJob        = reactortest.CreateJob
	rxNewTarget  = reactortest.NewTarget
)

// rxInstance is one chronos instance in a test: its pool, its bus, and the
// reactor and listener it runs (either may be absent).
type rxInstance struct {
	*reactortest.Instance
	Reactor *reactor.Reactor
}

// rxOptions say what an instance runs.
type rxOptions struct {
	Reactor        bool
	Listener       bool
	ReconnectDelay time.Duration
	Config         reactor.Config
}

// rxStart starts an instance on dsn, stopped at cleanup (reactor first,
// then listener, the order cmd uses).
func rxStart(t testing.TB, dsn, name string, o rxOptions) *rxInstance {
	t.Helper()
	in := &rxInstance{Instance: reactortest.NewInstance(t, dsn, name)}
	if o.Listener {
		in.StartListener(t, dsn, o.ReconnectDelay)
	}
	if o.Reactor {
		cfg := o.Config
		cfg.DSN, cfg.Instance, cfg.AllowPrivateTargets = dsn, name, true
		cfg.IdlePollInterval, cfg.LeaderPollInterval, cfg.ShutdownTimeout = reactortest.Timings(cfg.IdlePollInterval, cfg.LeaderPollInterval, cfg.ShutdownTimeout)
		in.Reactor = reactor.New(cfg, in.DB, in.Bus, in.Log)
		in.Go(in.Reactor.Run)
	}
	return in
}
