// Package listeners holds Chronos's one LISTEN connection per instance: it
// receives the NOTIFYs that the sql triggers send on chronos_jobs,
// chronos_runs and chronos_leader and republishes them as typed events on
// the in-process bus.
//
// Built on jackc/pgxlisten. Every (re)connect publishes EventResync once all
// channels are LISTENed (pgxlisten's HandleBacklog hook, counted so that it
// fires once per connection, not once per channel), so work announced while
// the listener was away is picked up at once. Losing the connection
// publishes EventListenerDown; reconnects back off exponentially from
// Config.ReconnectDelay up to a few seconds.
package listeners

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/bus"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgxlisten"
)

const (
	// DefaultReconnectDelay is the wait before the first reconnect after the
	// connection is lost. pgxlisten's own default is a minute, far too long
	// for a scheduler that relies on its notifications.
	DefaultReconnectDelay = 250 * time.Millisecond
	// MaxReconnectDelay caps the exponential backoff while the database
	// stays unreachable.
	MaxReconnectDelay = 5 * time.Second
	// connectTimeout bounds one connection attempt when the DSN sets no
	// connect_timeout, so an unreachable host is retried instead of hanging.
	connectTimeout = 5 * time.Second
	// The listener only reads, so a silently dead peer (a cut network)
	// would go unnoticed forever; TCP keepalives turn it into an error in
	// about keepAliveIdle + keepAliveCount*keepAliveInterval.
	keepAliveIdle     = 10 * time.Second
	keepAliveInterval = 5 * time.Second
	keepAliveCount    = 3
)

// Config configures a Listener.
type Config struct {
	DSN      string // the database to LISTEN on
	Instance string // names the instance; the connection's application_name is Instance+"-listener"
	// ReconnectDelay is the first wait before reconnecting; it doubles
	// (with jitter) per consecutive failed attempt, up to MaxReconnectDelay.
	// Zero means DefaultReconnectDelay.
	ReconnectDelay time.Duration
}

// Listener owns the instance's LISTEN connection. Create it with New and
// start it with Run.
type Listener struct {
	cfg       Config
	bus       *bus.Bus
	log       *slog.Logger
	connected atomic.Bool
	running   atomic.Bool

	// The fields below belong to the goroutine inside Run: pgxlisten calls
	// Connect, the handlers and LogError from it, one at a time.
	connCfg  *pgx.ConnConfig
	conn     *pgx.Conn // the current connection, nil between connections
	ready    int       // channels LISTENed on conn so far
	attempts int       // connection attempts since the last one that got ready
	started  bool      // a connection was attempted before (the first one does not wait)
}

// New returns a listener for cfg that publishes onto b. A nil log means
// slog.Default().
func New(cfg Config, b *bus.Bus, log *slog.Logger) *Listener {
	if cfg.ReconnectDelay <= 0 {
		cfg.ReconnectDelay = DefaultReconnectDelay
	}
	if log == nil {
		log = slog.Default()
	}
	return &Listener{cfg: cfg, bus: b, log: log.With("component", "listener", "instance", cfg.Instance)}
}

// Connected reports whether the listener is LISTENing on every channel
// right now (for /readyz).
func (l *Listener) Connected() bool { return l.connected.Load() }

// Run listens until ctx ends, reconnecting whenever the connection is lost,
// and returns nil then. It returns an error only for a DSN it cannot parse
// or when called while already running.
func (l *Listener) Run(ctx context.Context) error {
	if !l.running.CompareAndSwap(false, true) {
		return errors.New("listener: already running")
	}
	defer l.running.Store(false)

	// Parsed as a pool config so that pool_* settings in a shared
	// DATABASE_URL are understood and stripped, not sent to the server.
	poolCfg, err := pgxpool.ParseConfig(l.cfg.DSN)
	if err != nil {
		return fmt.Errorf("listener: parse dsn: %w", err)
	}
	connCfg := poolCfg.ConnConfig
	connCfg.RuntimeParams["application_name"] = l.cfg.Instance + "-listener"
	dialer := &net.Dialer{
		Timeout: connCfg.ConnectTimeout,
		KeepAliveConfig: net.KeepAliveConfig{
			Enable: true, Idle: keepAliveIdle, Interval: keepAliveInterval, Count: keepAliveCount,
		},
	}
	connCfg.DialFunc = dialer.DialContext
	l.connCfg, l.conn, l.ready, l.attempts, l.started = connCfg, nil, 0, 0, false

	pl := &pgxlisten.Listener{
		Connect:  l.connect,
		LogError: l.logError,
		// pgxlisten only knows a fixed delay; a negative one disables it and
		// connect applies the growing backoff itself.
		ReconnectDelay: -1,
	}
	for _, ch := range Channels {
		pl.Handle(ch, handler{l: l})
	}
	l.log.Debug("listener starting", "channels", Channels)
	err = pl.Listen(ctx)
	l.connected.Store(false)
	if ctx.Err() != nil {
		l.log.Debug("listener stopped")
		return nil
	}
	return fmt.Errorf("listener: %w", err)
}

// connect is pgxlisten's Connect: it waits out the backoff owed for earlier
// failures, then dials a fresh connection.
func (l *Listener) connect(ctx context.Context) (*pgx.Conn, error) {
	l.conn, l.ready = nil, 0
	if l.started {
		// attempts+1: the first reconnect after a healthy connection waits
		// ReconnectDelay, each further failure doubles it.
		d := chronos.BackoffDelay(chronos.BackoffExponential, l.cfg.ReconnectDelay, MaxReconnectDelay, l.attempts+1)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	l.started = true
	l.attempts++

	cctx := ctx
	if l.connCfg.ConnectTimeout == 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, connectTimeout)
		defer cancel()
	}
	conn, err := pgx.ConnectConfig(cctx, l.connCfg.Copy())
	if err != nil {
		return nil, err
	}
	l.conn = conn
	return conn, nil
}

// listening is called by pgxlisten (through HandleBacklog) after each
// channel's LISTEN; pgxlisten calls it once per channel, in map order. Only
// when every channel is LISTENed is the connection up: then, and only then,
// the resync is published, once.
func (l *Listener) listening(conn *pgx.Conn) {
	if conn != l.conn {
		return // cannot happen: pgxlisten uses the connection connect returned
	}
	l.ready++
	if l.ready != len(Channels) {
		return
	}
	l.attempts = 0
	l.connected.Store(true)
	l.log.Info("listener connected")
	l.bus.Publish(chronos.Event{Type: chronos.EventResync, Instance: l.cfg.Instance})
}

// logError is pgxlisten's LogError. pgxlisten reports there both non-fatal
// errors and the end of a connection; the two are told apart by the
// connection's state, because pgxlisten closes the connection before it
// reports why it ended.
func (l *Listener) logError(ctx context.Context, err error) {
	stopping := ctx.Err() != nil
	switch {
	case l.conn != nil && l.conn.IsClosed(): // the connection ended
		l.conn, l.ready = nil, 0
		wasUp := l.connected.Swap(false)
		switch {
		case stopping:
			l.log.Debug("listener connection closed on shutdown")
		case wasUp:
			l.log.Warn("listener connection lost", "err", err)
			l.bus.Publish(chronos.Event{Type: chronos.EventListenerDown, Instance: l.cfg.Instance, Error: err.Error()})
		default:
			l.log.Warn("listener connection failed before listening", "err", err)
		}
	case stopping:
		l.log.Debug("listener stopping", "err", err)
	case l.conn == nil:
		l.log.Warn("listener connect failed", "err", err, "attempt", l.attempts)
	default:
		l.log.Error("listener", "err", err)
	}
}

// notify decodes one notification and publishes it; a malformed payload is
// logged and dropped rather than published as a misleading event.
func (l *Listener) notify(channel, payload string) {
	e, err := decode(channel, payload)
	if err != nil {
		if len(payload) > 256 {
			payload = payload[:256] + "..."
		}
		l.log.Warn("listener dropped malformed notification", "channel", channel, "payload", payload, "err", err)
		return
	}
	l.bus.Publish(e)
}
