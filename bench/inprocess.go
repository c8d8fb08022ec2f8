package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	nethttp "net/http"
	"os"
	"sync"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/bus"
	chttp "github.com/chronoshq/chronos/http"
	"github.com/chronoshq/chronos/internal/pgdsn"
	"github.com/chronoshq/chronos/listeners"
	"github.com/chronoshq/chronos/reactor"
	"github.com/chronoshq/chronos/sql"
)

// selfPID is the bench's own process.
var selfPID = os.Getpid()

// inProcess is an instance wired like serve (listener, reactor, API on
// one bus), in this process.
type inProcess struct {
	id     string
	addr   string
	db     *sql.DB
	rdb    *sql.DB // the reactor's pool: db, or an async-commit one
	r      *reactor.Reactor
	bus    *bus.Bus
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errs   chan error
}

func startInProcess(ctx context.Context, b *runner, dsn, id string, opts instanceOpts) (*inProcess, error) {
	db, err := sql.Open(ctx, dsn, id)
	if err != nil {
		return nil, err
	}
	rdb := db // the reactor's pool
	if b.cfg.AsyncCommit {
		// Claims, starts and completions need not wait for the WAL flush:
		// one lost in a server crash means the run is delivered again,
		// which at-least-once delivery allows. Runs are still created
		// (API) on a synchronous pool.
		if rdb, err = sql.Open(ctx, pgdsn.WithParam(dsn, "synchronous_commit", "off"), id); err != nil {
			db.Close()
			return nil, err
		}
	}
	closeDBs := func() {
		if rdb != db {
			rdb.Close()
		}
		db.Close()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		closeDBs()
		return nil, err
	}
	bs := bus.New()
	lst := listeners.New(listeners.Config{DSN: dsn, Instance: id, ReconnectDelay: time.Second}, bs, b.cfg.Log)
	r := reactor.New(reactor.Config{
		DSN: dsn, Instance: id, WorkerConcurrency: b.cfg.Concurrency, AllowPrivateTargets: true,
		ShutdownTimeout: 10 * time.Second, RunRetention: opts.retention,
	}, rdb, bs, b.cfg.Log)
	api := chttp.NewServer(chttp.Config{Instance: id, AuthDisabled: true, TargetPolicy: chronos.TargetPolicy{AllowPrivate: true}}, db, bs, probe{lst, r}, b.cfg.Log)
	hs := &nethttp.Server{Handler: api.Handler(), ReadHeaderTimeout: 10 * time.Second}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p := &inProcess{id: id, addr: "http://" + ln.Addr().String(), db: db, rdb: rdb, r: r, bus: bs, cancel: cancel, errs: make(chan error, 4)}
	run := func(name string, f func() error) {
		p.wg.Go(func() {
			if err := f(); err != nil && !errors.Is(err, nethttp.ErrServerClosed) {
				p.errs <- fmt.Errorf("%s: %w", name, err)
			}
		})
	}
	run("listener", func() error { return lst.Run(runCtx) })
	run("reactor", func() error { return r.Run(runCtx) })
	run("api", func() error { return api.Run(runCtx) })
	run("http", func() error { return hs.Serve(ln) })
	p.wg.Go(func() {
		<-runCtx.Done()
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		_ = hs.Shutdown(sctx)
	})
	deadline := time.Now().Add(15 * time.Second)
	for !lst.Connected() {
		if time.Now().After(deadline) {
			_ = p.stop()
			return nil, errors.New("listener not connected within 15s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return p, nil
}

func (p *inProcess) name() string                    { return p.id }
func (p *inProcess) url() string                     { return p.addr }
func (p *inProcess) pid() int                        { return selfPID }
func (p *inProcess) isLeader(_ context.Context) bool { return p.r.IsLeader() }

func (p *inProcess) stop() error {
	p.cancel()
	p.wg.Wait()
	if p.rdb != p.db {
		p.rdb.Close()
	}
	p.db.Close()
	close(p.errs)
	var all []error
	for err := range p.errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// probe tells the API about the listener and the reactor for /readyz and
// /metrics, as serve's does.
type probe struct {
	l *listeners.Listener
	r *reactor.Reactor
}

func (p probe) ListenerConnected() bool { return p.l.Connected() }
func (p probe) IsLeader() bool          { return p.r.IsLeader() }
func (p probe) InFlight() int           { return p.r.InFlight() }
func (p probe) WorkerSlots() int        { return p.r.WorkerSlots() }
