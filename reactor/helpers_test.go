package reactor

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/bus"
	"github.com/chronoshq/chronos/reactor/reactortest"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// The helpers of this package's tests live in reactor/reactortest, shared
// with the ticket tests, and sql/sqltest; these are the names the tests
// here call them by.
var (
	createJob     = reactortest.CreateJob
	eventually    = reactortest.Eventually
	runOf         = sqltest.Run
	startListener = reactortest.StartListener
)

// parallelDSN opens most tests here: the test runs in parallel with the
// others, on a database of its own, named by the URL its instances open
// their pools with.
func parallelDSN(t *testing.T) string {
	t.Helper()
	t.Parallel()
	return sqltest.NewURL(t)
}

// instance is a running reactor in a test.
type instance struct {
	*reactortest.Instance
	r   *Reactor
	db  *sql.DB  // Instance.DB
	bus *bus.Bus // Instance.Bus
}

// startReactor runs a reactor on dsn until stop or cleanup, and fails the
// test when Run returns an error. Each prepare function may adjust the
// reactor before it runs.
func startReactor(t *testing.T, dsn string, cfg Config, prepare ...func(*Reactor)) *instance {
	t.Helper()
	base := reactortest.NewInstance(t, dsn, cfg.Instance)
	cfg.DSN, cfg.Instance, cfg.AllowPrivateTargets = dsn, base.Name, true
	cfg.IdlePollInterval, cfg.LeaderPollInterval, cfg.ShutdownTimeout = reactortest.Timings(cfg.IdlePollInterval, cfg.LeaderPollInterval, cfg.ShutdownTimeout)
	in := &instance{Instance: base, r: New(cfg, base.DB, base.Bus, base.Log), db: base.DB, bus: base.Bus}
	for _, p := range prepare {
		p(in.r)
	}
	base.Go(in.r.Run)
	return in
}

// stop cancels the reactor and waits for Run to return.
func (in *instance) stop() error { return in.Stop() }

// trigger enqueues a manual run of job and publishes it on the local bus,
// the way the API's trigger endpoint does.
func (in *instance) trigger(t testing.TB, jobID int64) *chronos.Run {
	t.Helper()
	return in.Trigger(t, jobID)
}

// target is a reactortest.Target under the field names the tests here use.
type target struct {
	*reactortest.Target
	hits, inFlight, maxSeen *atomic.Int64
}

func newTarget(t *testing.T, h http.HandlerFunc) *target {
	tg := reactortest.NewTarget(t, h)
	return &target{Target: tg, hits: &tg.Hits, inFlight: &tg.InFlight, maxSeen: &tg.MaxSeen}
}

// newHangingTarget starts a target that holds every request (hangUntil)
// until release, which may be called more than once. Release also runs at
// cleanup, before the target closes: closing waits for the handlers.
func newHangingTarget(t *testing.T) (tg *target, release func()) {
	hang := make(chan struct{})
	release = sync.OnceFunc(func() { close(hang) })
	tg = newTarget(t, hangUntil(hang))
	t.Cleanup(release)
	return tg, release
}

// hangUntil is a target's handler that never answers on its own: each
// request is held until release is closed or the caller gives up (its
// timeout, a shutdown), the host that hangs these tests need.
func hangUntil(release <-chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
}
