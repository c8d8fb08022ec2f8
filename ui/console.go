package ui

import (
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	nethttp "net/http"
	"sync"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/bus"
	"github.com/chronoshq/chronos/internal/keyslots"
	"github.com/chronoshq/chronos/sql"
)

//go:embed static templates/*.html
var assets embed.FS

// Prefix is where the console is mounted.
const Prefix = "/ui/"

// Config configures a Console.
type Config struct {
	// Instance names this instance in the events it publishes.
	Instance string
	// APIKeys are the API_KEYS entries of the REST API: the keys that may
	// sign in, with their names and roles.
	APIKeys []string
	// AuthDisabled opens the console to anyone, with write access, as it
	// opens the API.
	AuthDisabled bool
	// SessionSecret, when set (the same on every instance), is mixed into
	// the key that signs session cookies; changing it ends every session.
	// It is optional: the key's root is the cluster's random secret in the
	// database (sql.ClusterSecret), so API_KEYS alone, sha256: digests
	// included, never signs a session.
	SessionSecret string
	// TargetPolicy refuses target URLs at create and edit as the API does.
	TargetPolicy chronos.TargetPolicy
}

// Console is the web console. Build it with New; serve Handler under
// Prefix; call Close when the HTTP server shuts down, to end open event
// streams.
type Console struct {
	cfg    Config
	db     *sql.DB
	bus    *bus.Bus
	log    *slog.Logger
	keys   chronos.KeyRing
	rootMu sync.Mutex
	root   []byte // the session keys' root, read once (sessionRoot)
	pages  map[string]*template.Template
	static nethttp.Handler
	mux    *nethttp.ServeMux

	streams keyslots.Slots // open event streams by key (Max: MaxStreamsPerKey)
	fin     finishedCache  // the overview's settled minutes

	closing   chan struct{}
	closeOnce sync.Once
}

// New builds the console. Invalid API_KEYS entries are left out (the API's
// Config.Validate refuses them before either is built); a nil logger
// discards.
func New(cfg Config, db *sql.DB, b *bus.Bus, log *slog.Logger) *Console {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Console{cfg: cfg, db: db, bus: b, log: log.With("component", "ui"),
		streams: keyslots.Slots{Max: MaxStreamsPerKey}, closing: make(chan struct{})}
	for _, e := range cfg.APIKeys {
		if k, err := chronos.ParseAPIKey(e); err == nil {
			c.keys = append(c.keys, k)
		}
	}
	c.pages = parsePages()
	sub, _ := fs.Sub(assets, "static")
	c.static = nethttp.StripPrefix(Prefix+"static/", nethttp.FileServerFS(sub))
	c.mux = c.routes()
	return c
}

// Handler serves the console; mount it at Prefix (it answers only paths
// under it).
func (c *Console) Handler() nethttp.Handler { return c.mux }

// Close ends the open event streams; the console keeps serving pages.
func (c *Console) Close() { c.closeOnce.Do(func() { close(c.closing) }) }
