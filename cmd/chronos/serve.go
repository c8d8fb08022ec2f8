package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	nethttp "net/http"
	"strings"
	"sync"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chronoshq/chronos/bus"
	chttp "github.com/chronoshq/chronos/http"
	"github.com/chronoshq/chronos/listeners"
	"github.com/chronoshq/chronos/reactor"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/ui"
)

func init() {
	register(&command{
		name:    "serve",
		summary: "run an instance: the API, the reactor and the listener (configured from the environment)",
		run:     runServe,
	})
}

// shutdownSlack is how long past SHUTDOWN_TIMEOUT serve waits for its
// components before it gives up on them and exits non-zero.
const shutdownSlack = 10 * time.Second

func serveHelp() string {
	var b strings.Builder
	b.WriteString(`Runs one Chronos instance: the REST API, the event tap and the web console
(/ui/) on HTTP_ADDR, the reactor (dispatcher, workers, leader election,
materializer, reaper) and the LISTEN connection, all on one in-process bus. Run as many instances as you
like against one database: they share the work and elect one leader.

SIGTERM or SIGINT shuts down gracefully: no new claims, in-flight requests
get SHUTDOWN_TIMEOUT to finish, unfinished runs are released, leadership is
handed over, and the process exits 0.

Configuration comes from the environment:
`)
	for _, v := range serveVars {
		def := v.def
		if def == "" {
			def = "-"
		}
		fmt.Fprintf(&b, "\n  %-24s %-6s %s", v.name, def, v.help)
	}
	return b.String()
}

func runServe(ctx context.Context, args []string, env *environ) error {
	fs := newFlagSet(env, "serve", "", serveHelp())
	if err := fs.parse(args); err != nil {
		return err
	}
	cfg, err := loadServeConfig(env.getenv)
	if err != nil {
		return err
	}
	httpCfg := chttp.Config{Instance: cfg.InstanceID, Version: version, APIKeys: cfg.APIKeys, AuthDisabled: cfg.AuthDisabled,
		TargetPolicy: chronos.TargetPolicy{AllowPrivate: cfg.AllowPrivateTargets, AllowedNetworks: cfg.AllowedTargetNetworks},
		RateLimit:    orNegative(cfg.RateLimit), RateBurst: cfg.RateLimitBurst, MaxTapStreams: int(orNegative(float64(cfg.MaxTapStreams))),
		SeparateMetrics: cfg.MetricsAddr != ""}
	if err := httpCfg.Validate(); err != nil {
		return usageError{err}
	}
	log := newLogger(env.stderr, cfg.LogLevel, cfg.LogFormat)
	return serve(ctx, cfg, httpCfg, log)
}

// serve runs an instance until ctx ends, then shuts it down gracefully.
func serve(ctx context.Context, cfg *serveConfig, httpCfg chttp.Config, log *slog.Logger) error {
	started := time.Now()
	clog := log.With("component", "serve", "instance", cfg.InstanceID)

	// Load the certificate and listen before anything slow, so a bad
	// file or a port in use fails at once.
	var certs *certReloader
	if cfg.TLSCertFile != "" {
		var err error
		if certs, err = newCertReloader(cfg.TLSCertFile, cfg.TLSKeyFile, clog); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on HTTP_ADDR %q: %w", cfg.HTTPAddr, err)
	}
	defer ln.Close()
	var metricsLn net.Listener
	if cfg.MetricsAddr != "" {
		if metricsLn, err = net.Listen("tcp", cfg.MetricsAddr); err != nil {
			return fmt.Errorf("listen on METRICS_ADDR %q: %w", cfg.MetricsAddr, err)
		}
		defer metricsLn.Close()
	}

	db, err := connectDB(ctx, cfg, clog)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := checkSessions(ctx, cfg, db); err != nil {
		return err
	}
	rdb, err := reactorPool(ctx, cfg, db, clog)
	if err != nil {
		return err
	}
	if rdb != db {
		defer rdb.Close()
	}

	if cfg.MigrateOnStart {
		if err := sql.MigrateWith(ctx, cfg.directURL(), sql.MigrateOptions{Log: clog}); err != nil {
			return fmt.Errorf("apply migrations (MIGRATE_ON_START=true): %w", err)
		}
		clog.Info("migrations applied")
	}

	b := bus.New()
	lst := listeners.New(listeners.Config{DSN: cfg.directURL(), Instance: cfg.InstanceID}, b, log)
	r := reactor.New(reactor.Config{
		DSN:                   cfg.directURL(),
		Instance:              cfg.InstanceID,
		WorkerConcurrency:     cfg.WorkerConcurrency,
		IdlePollInterval:      cfg.IdlePollInterval,
		LeaseDuration:         cfg.LeaseDuration,
		LeaderPollInterval:    cfg.LeaderPollInterval,
		ReaperInterval:        cfg.ReaperInterval,
		RunRetention:          cfg.RunRetention,
		AuditRetention:        cfg.AuditRetention,
		ShutdownTimeout:       cfg.ShutdownTimeout,
		SigningSecret:         cfg.SigningSecret,
		AllowPrivateTargets:   cfg.AllowPrivateTargets,
		AllowedTargetNetworks: cfg.AllowedTargetNetworks,
		ClockSkew:             cfg.ClockSkew,
		Alerts:                reactor.AlertConfig{Webhook: cfg.DeadLetterWebhook},
		Hosts:                 reactor.HostConfig{BreakerFailures: breakerFailures(cfg.HostBreakerFailures), BreakerCooldown: cfg.HostBreakerCooldown},
	}, rdb, b, log)
	api := chttp.NewServer(httpCfg, db, b, probe{lst, r}, log)
	console := ui.New(ui.Config{Instance: cfg.InstanceID, APIKeys: httpCfg.APIKeys, AuthDisabled: httpCfg.AuthDisabled,
		SessionSecret: cfg.ConsoleSessionSecret, TargetPolicy: httpCfg.TargetPolicy}, db, b, log)
	hs := &nethttp.Server{
		Handler:           withConsole(api.Handler(), console.Handler()),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(clog.Handler(), slog.LevelWarn),
		// No WriteTimeout: the event tap streams for as long as the client stays.
	}
	hs.RegisterOnShutdown(console.Close) // end the console's event streams, as api.Run's return ends the tap's
	if certs != nil {
		hs.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.GetCertificate}
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	start := func(name string, run func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := run()
			if err != nil {
				err = fmt.Errorf("%s: %w", name, err)
			} else if runCtx.Err() == nil {
				err = fmt.Errorf("%s stopped unexpectedly", name)
			}
			if err != nil {
				cancel() // one component down takes the instance down
			}
			errs <- err
		}()
	}
	start("listener", func() error { return lst.Run(runCtx) })
	start("instance registry", func() error { registerLoop(runCtx, db, cfg.InstanceID, clog); return nil })
	start("reactor", func() error { return r.Run(runCtx) })
	start("api", func() error { return api.Run(runCtx) }) // metrics; closes event streams when it returns
	start("http server", func() error { return serveUntil(runCtx, hs, ln, certs != nil, cfg.ShutdownTimeout) })
	if metricsLn != nil {
		ms := &nethttp.Server{Handler: metricsMux(api), ReadHeaderTimeout: 10 * time.Second,
			ErrorLog: slog.NewLogLogger(clog.Handler(), slog.LevelWarn)}
		start("metrics server", func() error { return serveUntil(runCtx, ms, metricsLn, false, cfg.ShutdownTimeout) })
		clog.Info("metrics served apart", "metrics_addr", metricsLn.Addr().String())
	}
	clog.Info("chronos started", "addr", ln.Addr().String(), "tls", certs != nil, "version", version,
		"worker_concurrency", cfg.WorkerConcurrency, "reactor_synchronous_commit", onOff(cfg.ReactorSyncCommit), "auth_disabled", cfg.AuthDisabled,
		"allow_private_targets", cfg.AllowPrivateTargets, "allowed_target_networks", fmt.Sprint(cfg.AllowedTargetNetworks), "signing", cfg.SigningSecret != "",
		"dead_letter_webhook", cfg.DeadLetterWebhook != "")

	<-runCtx.Done()
	if ctx.Err() != nil {
		clog.Info("shutting down", "timeout", cfg.ShutdownTimeout.String())
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(cfg.ShutdownTimeout + shutdownSlack):
		return fmt.Errorf("shutdown did not finish within SHUTDOWN_TIMEOUT (%s) + %s", cfg.ShutdownTimeout, shutdownSlack)
	}
	close(errs)
	var all []error
	for err := range errs {
		if err != nil {
			all = append(all, err)
		}
	}
	if err := errors.Join(all...); err != nil {
		return err
	}
	clog.Info("chronos stopped", "uptime", time.Since(started).Round(time.Millisecond).String())
	return nil
}

// registerEvery is how often an instance refreshes its row in
// chronos_instances and reads the schema's minimum version again.
const registerEvery = time.Minute

// registerLoop records this instance's version (for /readyz and the
// console) until ctx ends, and says loudly when the schema has moved past
// this binary: it then never leads or materializes (sql.LeaderConn
// refuses), but keeps delivering runs.
func registerLoop(ctx context.Context, db *sql.DB, instance string, log *slog.Logger) {
	var warned string
	for {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		compat, err := db.RegisterInstance(rctx, instance, version)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			log.Warn("instance registration failed; retrying", "err", err)
		default:
			tooOld := ""
			if err := compat.Check(sql.SchemaLevel()); err != nil {
				tooOld = err.Error()
			}
			if tooOld != warned {
				if tooOld != "" {
					log.Error("upgrade this instance: "+tooOld, "version", version, "schema_level", sql.SchemaLevel(),
						"min_lead_level", compat.MinLeadLevel, "min_materialize_level", compat.MinMaterializeLevel)
				} else {
					log.Info("this version may lead and materialize", "version", version, "schema_level", sql.SchemaLevel())
				}
				warned = tooOld
			}
		}
		t := time.NewTimer(registerEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// errPoolerWithoutDirect: DATABASE_URL goes through a pooler and nothing
// reaches Postgres itself.
var errPoolerWithoutDirect = errors.New("DATABASE_URL goes through a connection pooler (PgBouncer?), and DATABASE_DIRECT_URL is not set: " +
	"set DATABASE_DIRECT_URL to Postgres itself: the LISTEN connection, the leader's lock and migrations need a session of their own")

// checkSessions refuses a DATABASE_URL that goes through a pooler when no
// DATABASE_DIRECT_URL says where Postgres itself is: the instance would
// start, but never lead and miss every notification.
func checkSessions(ctx context.Context, cfg *serveConfig, db *sql.DB) error {
	if cfg.DatabaseDirectURL != "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.DatabaseConnectTimeout)
	defer cancel()
	pooled, err := db.BehindPooler(ctx)
	if err != nil {
		return err
	}
	if pooled {
		return errPoolerWithoutDirect
	}
	return nil
}

// connectDB opens the pool and waits until the database answers, retrying
// for up to DATABASE_CONNECT_TIMEOUT (compose starts chronos and Postgres
// together; a database that is still booting is not an error yet).
func connectDB(ctx context.Context, cfg *serveConfig, log *slog.Logger) (*sql.DB, error) {
	return connectDSN(ctx, cfg, cfg.DatabaseURL, false, log)
}

// connectDSN is connectDB on dsn (DATABASE_URL, or DATABASE_DIRECT_URL for
// `chronos migrate`), its writes committing asynchronously when async.
func connectDSN(ctx context.Context, cfg *serveConfig, dsn string, async bool, log *slog.Logger) (*sql.DB, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.DatabaseConnectTimeout)
	defer cancel()
	db, err := sql.OpenWith(ctx, dsn, sql.Options{Instance: cfg.InstanceID, AsyncCommit: async, Pooled: cfg.pooled() && dsn == cfg.DatabaseURL})
	if err != nil {
		return nil, fmt.Errorf("invalid DATABASE_URL: %w", err)
	}
	var lastErr error // the last error that says why, not that time ran out
	delay := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err = db.Ping(ctx)
		if err == nil {
			return db, nil
		}
		if lastErr == nil || ctx.Err() == nil {
			lastErr = err
		}
		if reason := permanentConnectError(err); reason != "" {
			db.Close()
			return nil, fmt.Errorf("cannot connect to DATABASE_URL: %s: %w", reason, err)
		}
		if attempt == 1 {
			log.Warn("database not reachable yet; retrying", "timeout", cfg.DatabaseConnectTimeout.String(), "err", err)
		}
		select {
		case <-ctx.Done():
			db.Close()
			if errors.Is(context.Cause(ctx), context.Canceled) {
				return nil, fmt.Errorf("interrupted while connecting to DATABASE_URL: %w", lastErr)
			}
			return nil, fmt.Errorf("cannot reach DATABASE_URL within %s (DATABASE_CONNECT_TIMEOUT): %w", cfg.DatabaseConnectTimeout, lastErr)
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
	}
}

// reactorPool returns the pool the reactor writes on: db itself with
// REACTOR_SYNCHRONOUS_COMMIT=on, else a second pool on DATABASE_URL whose
// transactions and statements each set synchronous_commit=off for
// themselves (sql.Options.AsyncCommit: no startup parameter, so it works
// through PgBouncer in transaction mode). Its commits (claims, starts, completions,
// materialized runs, reaped leases) then return before the WAL reaches
// the disk; the API keeps db, so what it acknowledges (jobs created,
// triggers, redrives) is durable, and each such commit also makes the
// reactor's earlier commits durable. The second pool is sized like the
// first (pool_max_conns, or sql.Open's default): the reactor is the pool's
// main user under load, and halving it would slow the very writes this
// setting speeds up; idle connections close after a minute, so an
// instance holds about twice the connections only while both the API and
// the workers are busy.
func reactorPool(ctx context.Context, cfg *serveConfig, db *sql.DB, log *slog.Logger) (*sql.DB, error) {
	if cfg.ReactorSyncCommit {
		return db, nil
	}
	rdb, err := connectDSN(ctx, cfg, cfg.DatabaseURL, true, log)
	if err != nil {
		return nil, fmt.Errorf("reactor pool (REACTOR_SYNCHRONOUS_COMMIT=off): %w", err)
	}
	return rdb, nil
}

// onOff names a synchronous_commit setting as Postgres does.
func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// permanentConnectError says why err will not go away by retrying (a
// database or role that does not exist, a refused password), or "" for an
// error worth retrying: a server that is down or still starting.
func permanentConnectError(err error) string {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return ""
	}
	switch {
	case pe.Code == "3D000": // invalid_catalog_name
		return "the database does not exist"
	case pe.Code == "28P01": // invalid_password
		return "authentication failed"
	case pe.Code == "28000": // invalid_authorization_specification
		return "the role does not exist or may not connect (pg_hba.conf)"
	case strings.HasPrefix(pe.Code, "28"):
		return "authentication failed"
	}
	return ""
}

// probe tells the API about the listener and the reactor for /readyz and
// /metrics (it is an http.WorkProbe too).
type probe struct {
	l *listeners.Listener
	r *reactor.Reactor
}

func (p probe) ListenerConnected() bool { return p.l.Connected() }
func (p probe) IsLeader() bool          { return p.r.IsLeader() }

// orNegative maps the environment's "0 means off" to chttp.Config's
// "negative means off" (0 there means the default).
func orNegative(v float64) float64 {
	if v == 0 {
		return -1
	}
	return v
}

// serveUntil serves hs on ln (TLS with hs.TLSConfig when useTLS) until
// ctx ends, then shuts it down within timeout, closing the connections
// of requests that outlast it.
func serveUntil(ctx context.Context, hs *nethttp.Server, ln net.Listener, useTLS bool, timeout time.Duration) error {
	serveErr := make(chan error, 1)
	go func() {
		if useTLS {
			serveErr <- hs.ServeTLS(ln, "", "") // the certificate comes from TLSConfig.GetCertificate
			return
		}
		serveErr <- hs.Serve(ln)
	}()
	select {
	case err := <-serveErr:
		return err // Serve returns only on failure before Shutdown
	case <-ctx.Done():
	}
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer scancel()
	err := hs.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		// Requests still in flight after the grace (a client sending
		// slowly, a probe behind a slow database): cut them, as the
		// reactor cancels the deliveries still in flight. A stop that was
		// asked for is no failure: SIGTERM still exits 0.
		if hs.ErrorLog != nil {
			hs.ErrorLog.Printf("shutdown: requests still in flight after SHUTDOWN_TIMEOUT (%s) were cut off", timeout)
		}
		_ = hs.Close() // its only error: the listener, closed already by Shutdown
		err = nil
	}
	if serr := <-serveErr; !errors.Is(serr, nethttp.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// metricsMux serves GET /metrics of api, and nothing else, on
// METRICS_ADDR.
func metricsMux(api *chttp.Server) nethttp.Handler {
	mux := nethttp.NewServeMux()
	mux.Handle("GET /metrics", api.MetricsHandler())
	return mux
}
func (p probe) InFlight() int    { return p.r.InFlight() }
func (p probe) WorkerSlots() int { return p.r.WorkerSlots() }

// withConsole serves the web console under ui.Prefix (and sends /ui to
// it) beside the API, which keeps every other path exactly as before (no
// ServeMux in front of it to clean or redirect paths).
func withConsole(api, console nethttp.Handler) nethttp.Handler {
	return nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		switch p := r.URL.Path; {
		case p == strings.TrimSuffix(ui.Prefix, "/") && (r.Method == nethttp.MethodGet || r.Method == nethttp.MethodHead):
			nethttp.Redirect(w, r, ui.Prefix, nethttp.StatusMovedPermanently)
		case strings.HasPrefix(p, ui.Prefix):
			console.ServeHTTP(w, r)
		default:
			api.ServeHTTP(w, r)
		}
	})
}
