package http

import (
	"context"
	"errors"
	"log/slog"
	nethttp "net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/chronoshq/chronos/bus"
	"github.com/chronoshq/chronos/sql"
)

// DefaultMaxBodyBytes is the request body limit when Config.MaxBodyBytes is 0.
const DefaultMaxBodyBytes int64 = 1 << 20

// Config configures a Server.
type Config struct {
	// Instance names this instance in responses, logs and /readyz.
	Instance string
	// APIKeys are the accepted bearer tokens. At least one is required
	// unless AuthDisabled is set.
	APIKeys []string
	// AuthDisabled turns authentication off. It must be set explicitly: a
	// server without keys refuses to start otherwise.
	AuthDisabled bool
	// MaxBodyBytes limits request bodies (DefaultMaxBodyBytes when 0); a
	// larger body is a 413.
	MaxBodyBytes int64
}

// Validate reports a configuration the server must refuse to start with:
// no API keys while authentication is enabled, or an empty key.
func (c Config) Validate() error {
	if c.MaxBodyBytes < 0 {
		return errors.New("http config: MaxBodyBytes must not be negative")
	}
	if c.AuthDisabled {
		return nil
	}
	if len(c.APIKeys) == 0 {
		return errors.New("http config: no API keys set; set API_KEYS or AUTH_DISABLED=true explicitly")
	}
	for i, k := range c.APIKeys {
		if strings.TrimSpace(k) == "" {
			return errors.New("http config: API key " + strconv.Itoa(i+1) + " is empty")
		}
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
	keys    [][32]byte
	engine  *gin.Engine
	metrics *metrics

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
	for _, k := range cfg.APIKeys {
		s.keys = append(s.keys, hashKey(k))
	}
	if cfg.AuthDisabled {
		log.Warn("API authentication is DISABLED: every /v1 route is open to anyone who can reach this port")
	}
	s.metrics = newMetrics(b, probe, db, log)
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
