package http

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	nethttp "net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/bus"
	"github.com/chronoshq/chronos/sql"
)

// DefaultMaxBodyBytes is the request body limit when Config.MaxBodyBytes is 0.
const DefaultMaxBodyBytes int64 = 1 << 20

// Config configures a Server.
type Config struct {
	// Instance names this instance in responses, logs and /readyz.
	Instance string
	// Version is the binary's release version (`chronos version`), shown
	// by /readyz and chronos_build_info.
	Version string
	// APIKeys are the accepted bearer tokens, as API_KEYS entries: key,
	// name:key or name:role:key, the key possibly as sha256:<hex> (see
	// ParseAPIKey). At least one is required unless AuthDisabled is set.
	APIKeys []string
	// AuthDisabled turns authentication off. It must be set explicitly: a
	// server without keys refuses to start otherwise.
	AuthDisabled bool
	// MaxBodyBytes limits request bodies (DefaultMaxBodyBytes when 0); a
	// larger body is a 413.
	MaxBodyBytes int64
	// RateLimit is each API key's sustained request rate per second on
	// this instance (DefaultRateLimit when 0; negative: no limit), with
	// bursts of RateBurst (DefaultRateBurst when 0). Past it: 429 with
	// Retry-After.
	RateLimit float64
	RateBurst int
	// MaxTapStreams caps the event-tap streams one key holds at once on
	// this instance (DefaultMaxTapStreams when 0; negative: no cap).
	MaxTapStreams int
	// SeparateMetrics leaves /metrics off the API's router, for cmd to
	// serve MetricsHandler on a listener of its own (METRICS_ADDR).
	SeparateMetrics bool
	// TargetPolicy is the outbound address policy in force (the reactor's):
	// a target_url whose host is a literal address it refuses is a 400 at
	// create and PATCH. Hostnames are judged when dialled.
	TargetPolicy chronos.TargetPolicy
}

// Validate reports a configuration the server must refuse to start with:
// no API keys while authentication is enabled, or an empty key.
func (c Config) Validate() error {
	if c.MaxBodyBytes < 0 {
		return errors.New("http config: MaxBodyBytes must not be negative")
	}
	if c.RateBurst < 0 {
		return errors.New("http config: RateBurst must not be negative")
	}
	if c.AuthDisabled {
		return nil
	}
	if len(c.APIKeys) == 0 {
		return errors.New("http config: no API keys set; set API_KEYS or AUTH_DISABLED=true explicitly")
	}
	if _, err := ParseAPIKeys(c.APIKeys); err != nil {
		return fmt.Errorf("http config: %w", err)
	}
	return nil
}

// Probe tells /readyz and /metrics about the rest of the instance.
type Probe interface {
	// ListenerConnected reports whether the LISTEN connection is up.
	ListenerConnected() bool
	// IsLeader reports whether this instance holds the leadership lock.
	IsLeader() bool
}

// Server is the HTTP API of one instance. Build it with NewServer.
type Server struct {
	cfg     Config
	db      *sql.DB
	bus     *bus.Bus
	probe   Probe
	log     *slog.Logger
	keys    []APIKey
	engine  *gin.Engine
	metrics *metrics
	limits  *limits

	// heartbeat is the event tap's keep-alive interval (15 s; shorter in
	// tests).
	heartbeat time.Duration
	// tapBuffer is the bus buffer of one event-tap client.
	tapBuffer int

	// closing is closed when Run returns, ending event streams.
	closing   chan struct{}
	closeOnce sync.Once
	runOnce   sync.Once
}

var ginModeOnce sync.Once

// NewServer builds the API. It does not listen: serve Handler() from a
// net/http.Server and call Run alongside it. A nil probe reports a
// disconnected listener and no leadership; a nil logger discards.
func NewServer(cfg Config, db *sql.DB, b *bus.Bus, probe Probe, log *slog.Logger) *Server {
	// gin's mode is process-global; release mode stops its debug chatter.
	ginModeOnce.Do(func() { gin.SetMode(gin.ReleaseMode) })
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	switch {
	case cfg.RateLimit == 0:
		cfg.RateLimit = DefaultRateLimit
		if cfg.RateBurst == 0 {
			cfg.RateBurst = DefaultRateBurst
		}
	case cfg.RateLimit < 0:
		cfg.RateLimit = 0
	}
	switch {
	case cfg.MaxTapStreams == 0:
		cfg.MaxTapStreams = DefaultMaxTapStreams
	case cfg.MaxTapStreams < 0:
		cfg.MaxTapStreams = 0
	}
	if probe == nil {
		probe = noProbe{}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg:       cfg,
		db:        db,
		bus:       b,
		probe:     probe,
		log:       log,
		heartbeat: 15 * time.Second,
		tapBuffer: 1024,
		closing:   make(chan struct{}),
	}
	// Validate refuses bad entries before a server is built; one that
	// slips through is left out (it can match nothing) and logged.
	for i, e := range cfg.APIKeys {
		k, err := ParseAPIKey(e)
		if err != nil {
			log.Error("API key ignored", slog.Int("position", i+1), slog.String("error", err.Error()))
			continue
		}
		s.keys = append(s.keys, k)
	}
	if cfg.AuthDisabled {
		log.Warn("API authentication is DISABLED: every /v1 route is open to anyone who can reach this port")
	}
	s.limits = newLimits(cfg)
	s.metrics = newMetrics(b, probe, db, log)
	s.metrics.reg.MustRegister(buildInfo(cfg.Version))
	s.engine = s.routes()
	return s
}

// Handler is the API's root handler.
func (s *Server) Handler() nethttp.Handler { return s.engine }

// Run consumes bus events into the metrics until ctx ends, then closes the
// open event-tap streams and returns nil. cmd must call it (once) for the
// run, claim and listener metrics to move; a second call returns an error.
func (s *Server) Run(ctx context.Context) error {
	ran := false
	s.runOnce.Do(func() {
		ran = true
		s.metrics.consume(ctx, s.bus)
	})
	s.closeOnce.Do(func() { close(s.closing) })
	if !ran {
		return errors.New("http server: Run called twice")
	}
	return nil
}

type noProbe struct{}

func (noProbe) ListenerConnected() bool { return false }
func (noProbe) IsLeader() bool          { return false }
