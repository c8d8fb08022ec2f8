package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chronoshq/chronos"
)

// serveConfig is the configuration of `chronos serve`, read from the
// environment by loadServeConfig.
type serveConfig struct {
	DatabaseURL            string
	DatabaseDirectURL      string // "": DATABASE_URL (see directURL)
	DatabaseConnectTimeout time.Duration
	HTTPAddr               string
	TLSCertFile            string
	TLSKeyFile             string
	MetricsAddr            string // "": /metrics on HTTP_ADDR
	WorkerConcurrency      int
	ReactorSyncCommit      bool // false: the reactor's own pool has synchronous_commit=off
	IdlePollInterval       time.Duration
	LeaseDuration          time.Duration
	LeaderPollInterval     time.Duration
	ReaperInterval         time.Duration
	RunRetention           time.Duration
	AuditRetention         time.Duration
	ShutdownTimeout        time.Duration
	APIKeys                []string
	AuthDisabled           bool
	SigningSecret          string
	ConsoleSessionSecret   string
	AllowPrivateTargets    bool
	AllowedTargetNetworks  []netip.Prefix
	DeadLetterWebhook      string  // "": no cluster-wide dead-run alerts
	RateLimit              float64 // requests per second per key; 0: none
	RateLimitBurst         int
	MaxTapStreams          int // per key; 0: no cap
	LogLevel               slog.Level
	LogFormat              string // "json" or "text"
	InstanceID             string
	MigrateOnStart         bool
	ClockSkew              time.Duration // CHRONOS_CLOCK_SKEW, testing only
	HostBreakerFailures    int           // 0 or negative: the breaker is off (reactor: -1)
	HostBreakerCooldown    time.Duration
}

// clockSkewVar shifts the instance's own clock, for tests of skewed
// clocks (the fault suite's model test). It is not in serveVars: it is
// no setting an operator should reach for.
const clockSkewVar = "CHRONOS_CLOCK_SKEW"

// envVar is one environment variable of `chronos serve`: its default (as
// the user would write it), what it means, and how it is applied. The
// table drives parsing, `chronos serve --help` and the configuration table of
// docs/operations.md (readme_test.go holds the two to each other).
type envVar struct {
	name  string
	def   string // "" when there is no default
	help  string
	apply func(c *serveConfig, v string) error // v is the trimmed value, or def
}

// maxInstanceID is the longest instance id: it becomes the Postgres
// application_name (63 bytes), which names the leader, so it must not be
// truncated.
const maxInstanceID = 63

// serveVars lists every variable `chronos serve` reads, in the order they
// are checked and documented.
var serveVars = []envVar{
	{"DATABASE_URL", "", "Postgres connection string (required), e.g. postgres://chronos:chronos@localhost:5433/chronos?sslmode=disable",
		func(c *serveConfig, v string) error {
			if v == "" {
				return fmt.Errorf("DATABASE_URL is required, e.g. postgres://chronos:chronos@localhost:5433/chronos?sslmode=disable")
			}
			if err := checkScheme(v); err != nil {
				return err
			}
			if _, err := pgx.ParseConfig(v); err != nil {
				// pgx redacts the password in its message.
				return fmt.Errorf("invalid DATABASE_URL: %v", err)
			}
			c.DatabaseURL = v
			return nil
		}},
	{"DATABASE_DIRECT_URL", "", "Postgres connection string for what needs a session of its own: the LISTEN connection, the leader's lock, migrations (default DATABASE_URL). Set it when DATABASE_URL goes through PgBouncer in transaction mode: DATABASE_URL is then used as a transaction pooler (no named prepared statements, no session settings)",
		func(c *serveConfig, v string) error {
			if v == "" {
				return nil
			}
			if err := checkScheme(v); err != nil {
				return errors.New(strings.Replace(err.Error(), "DATABASE_URL", "DATABASE_DIRECT_URL", 1))
			}
			if _, err := pgx.ParseConfig(v); err != nil {
				return fmt.Errorf("invalid DATABASE_DIRECT_URL: %v", err)
			}
			c.DatabaseDirectURL = v
			return nil
		}},
	{"DATABASE_CONNECT_TIMEOUT", "10s", "how long startup keeps retrying to reach the database before giving up",
		durationVar(func(c *serveConfig) *time.Duration { return &c.DatabaseConnectTimeout })},
	{"HTTP_ADDR", ":8080", "address the API listens on (host:port; port 0 picks a free one)",
		func(c *serveConfig, v string) error {
			if err := checkHostPort(v); err != nil {
				return err
			}
			c.HTTPAddr = v
			return nil
		}},
	{"TLS_CERT_FILE", "", "PEM certificate (chain) for HTTPS on HTTP_ADDR, with TLS_KEY_FILE; reloaded when the files change",
		func(c *serveConfig, v string) error { c.TLSCertFile = v; return nil }},
	{"TLS_KEY_FILE", "", "PEM private key of TLS_CERT_FILE",
		func(c *serveConfig, v string) error { c.TLSKeyFile = v; return nil }},
	{"METRICS_ADDR", "", "serve /metrics on this address (host:port) instead of HTTP_ADDR, e.g. 127.0.0.1:9090",
		func(c *serveConfig, v string) error {
			if v == "" {
				return nil
			}
			if err := checkHostPort(v); err != nil {
				return err
			}
			c.MetricsAddr = v
			return nil
		}},
	{"WORKER_CONCURRENCY", "32", "most webhook requests one instance has in flight at once",
		intVar(1, "must be a positive integer", func(c *serveConfig) *int { return &c.WorkerConcurrency })},
	{"REACTOR_SYNCHRONOUS_COMMIT", "off", "off gives the reactor (claims, starts, completions, reaper) a pool of its own with synchronous_commit=off (the materializer's runs and the API's writes stay synchronous); on puts the reactor on the API's synchronous pool",
		func(c *serveConfig, v string) error {
			switch strings.ToLower(v) {
			case "on":
				c.ReactorSyncCommit = true
			case "off":
				c.ReactorSyncCommit = false
			default:
				return badValue("must be on or off")
			}
			return nil
		}},
	{"IDLE_POLL_INTERVAL", "3s", "fallback poll for due runs when no notification arrives",
		durationVar(func(c *serveConfig) *time.Duration { return &c.IdlePollInterval })},
	{"LEASE_DURATION", "30s", "how long a claimed run stays leased to its worker (renewed while the request is in flight)",
		durationVar(func(c *serveConfig) *time.Duration { return &c.LeaseDuration })},
	{"LEADER_POLL_INTERVAL", "1s", "how often a follower tries for leadership (and the leader checks its connection)",
		durationVar(func(c *serveConfig) *time.Duration { return &c.LeaderPollInterval })},
	{"REAPER_INTERVAL", "5s", "how often the leader reclaims runs whose lease expired",
		durationVar(func(c *serveConfig) *time.Duration { return &c.ReaperInterval })},
	{"RUN_RETENTION", "168h", "runs scheduled longer ago than this are dropped by the leader, a partition (RUN_RETENTION/4 wide, a minute to a day) at a time, once none of its runs is unfinished",
		durationVar(func(c *serveConfig) *time.Duration { return &c.RunRetention })},
	{"AUDIT_RETENTION", "2160h", "audit history entries (GET /v1/jobs/{id}/history) older than this are pruned by the leader",
		durationVar(func(c *serveConfig) *time.Duration { return &c.AuditRetention })},
	{"SHUTDOWN_TIMEOUT", "25s", "on SIGTERM/SIGINT, how long in-flight requests may finish before their runs are released",
		durationVar(func(c *serveConfig) *time.Duration { return &c.ShutdownTimeout })},
	{"API_KEYS", "", "comma-separated API keys for `Authorization: Bearer <key>` on /v1: key, name:key or name:read|write:key; key may be sha256:<hex> (required unless AUTH_DISABLED=true)",
		func(c *serveConfig, v string) error {
			c.APIKeys = nil
			for _, k := range strings.Split(v, ",") {
				if k = strings.TrimSpace(k); k != "" {
					c.APIKeys = append(c.APIKeys, k)
				}
			}
			return nil
		}},
	{"AUTH_DISABLED", "false", "true turns API key checks off (local development only)",
		boolVar(func(c *serveConfig) *bool { return &c.AuthDisabled })},
	{"SIGNING_SECRET", "", "when set, every delivery carries X-Chronos-Timestamp and an HMAC-SHA256 X-Chronos-Signature",
		func(c *serveConfig, v string) error { c.SigningSecret = v; return nil }},
	{"CONSOLE_SESSION_SECRET", "", "optional: mixed into the key that signs console session cookies (beside the cluster secret kept in the database); set the same value on every instance, change it to end every session",
		func(c *serveConfig, v string) error { c.ConsoleSessionSecret = v; return nil }},
	{"RATE_LIMIT", "1000", "requests per second each API key may make to one instance (429 with Retry-After past it); 0 turns the limit off",
		parsedVar("must be a number of requests per second, 0 or more", func(v string) (float64, bool) {
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil && f >= 0 && !math.IsInf(f, 0) && !math.IsNaN(f)
		}, func(c *serveConfig) *float64 { return &c.RateLimit })},
	{"RATE_LIMIT_BURST", "2000", "requests an API key may send at once before RATE_LIMIT paces it",
		intVar(1, "must be a positive integer", func(c *serveConfig) *int { return &c.RateLimitBurst })},
	{"MAX_TAP_STREAMS_PER_KEY", "16", "event-tap streams one API key may hold open on one instance; 0 means no cap",
		intVar(0, "must be a non-negative integer", func(c *serveConfig) *int { return &c.MaxTapStreams })},
	{"ALLOW_PRIVATE_TARGETS", "false", "true lets jobs call every special-purpose address (private, loopback, ...) but cloud metadata endpoints",
		boolVar(func(c *serveConfig) *bool { return &c.AllowPrivateTargets })},
	{"ALLOWED_TARGET_NETWORKS", "", "comma-separated CIDRs jobs may call although special-purpose, e.g. 10.20.0.0/16 (never metadata endpoints)",
		func(c *serveConfig, v string) error {
			n, err := chronos.ParseNetworks(v)
			if err != nil {
				return badValue(err.Error())
			}
			c.AllowedTargetNetworks = n
			return nil
		}},
	{"DEAD_LETTER_WEBHOOK", "", "http(s) URL that gets a signed alert (JSON with a Slack-compatible text) whenever a run of any job goes dead; set it alike on every instance",
		func(c *serveConfig, v string) error {
			if v == "" {
				return nil
			}
			// The URL may hold a token (a Slack webhook's path does): the
			// message names the variable, never the value.
			if err := chronos.ValidateTargetURL(v); err != nil {
				return fmt.Errorf("invalid DEAD_LETTER_WEBHOOK: %v", err)
			}
			policy := chronos.TargetPolicy{AllowPrivate: c.AllowPrivateTargets, AllowedNetworks: c.AllowedTargetNetworks}
			if err := policy.CheckURL(v); err != nil {
				return fmt.Errorf("invalid DEAD_LETTER_WEBHOOK: %v (see ALLOW_PRIVATE_TARGETS and ALLOWED_TARGET_NETWORKS)", err)
			}
			c.DeadLetterWebhook = v
			return nil
		}},
	{"HOST_BREAKER_FAILURES", "10", "consecutive connection failures or 5xx answers from one host (scheme://host:port) that open its circuit breaker, cluster-wide; 0 or negative turns the breaker off",
		intVar(math.MinInt, "must be an integer (0 or negative: off)", func(c *serveConfig) *int { return &c.HostBreakerFailures })},
	{"HOST_BREAKER_COOLDOWN", "30s", "how long an open host breaker holds the host's runs before one probe goes",
		durationVar(func(c *serveConfig) *time.Duration { return &c.HostBreakerCooldown })},
	{"LOG_LEVEL", "info", "debug, info, warn or error",
		func(c *serveConfig, v string) error {
			if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil || !knownLevel(v) {
				return badValue("must be debug, info, warn or error")
			}
			return nil
		}},
	{"LOG_FORMAT", "", "json or text (default: text on a terminal, json otherwise)",
		func(c *serveConfig, v string) error {
			switch strings.ToLower(v) {
			case "":
				c.LogFormat = "json"
				if isTerminal(os.Stderr) {
					c.LogFormat = "text"
				}
			case "json", "text":
				c.LogFormat = strings.ToLower(v)
			default:
				return badValue("must be json or text")
			}
			return nil
		}},
	{"INSTANCE_ID", "", "this instance's name in logs, leases and /readyz (default: hostname-<random>)",
		func(c *serveConfig, v string) error {
			if v == "" {
				v = defaultInstanceID()
			}
			if len(v) > maxInstanceID || strings.IndexFunc(v, func(r rune) bool { return r <= ' ' || r >= 0x7f }) >= 0 {
				return badValue(fmt.Sprintf("must be at most %d printable ASCII characters without spaces", maxInstanceID))
			}
			c.InstanceID = v
			return nil
		}},
	{"MIGRATE_ON_START", "true", "apply database migrations at startup (safe with several replicas)",
		boolVar(func(c *serveConfig) *bool { return &c.MigrateOnStart })},
}

// loadServeConfig reads the configuration of `chronos serve` from getenv.
// The first bad value stops it with one line naming the variable.
func loadServeConfig(getenv func(string) string) (*serveConfig, error) {
	c, err := loadEnv(getenv, serveVars)
	if err != nil {
		return nil, err
	}
	if v := strings.TrimSpace(getenv(clockSkewVar)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, usagef("%s=%q: must be a duration such as 3s or -3s", clockSkewVar, v)
		}
		c.ClockSkew = d
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return nil, usagef("TLS_CERT_FILE and TLS_KEY_FILE go together: set both for HTTPS, or neither")
	}
	if c.MetricsAddr != "" && c.MetricsAddr == c.HTTPAddr {
		return nil, usagef("METRICS_ADDR %q is HTTP_ADDR: leave METRICS_ADDR empty to serve /metrics on the API's address", c.MetricsAddr)
	}
	if len(c.APIKeys) == 0 && !c.AuthDisabled {
		return nil, usagef("API_KEYS is empty: set API_KEYS=key1,key2 (clients send Authorization: Bearer <key>), or AUTH_DISABLED=true for local development")
	}
	return c, nil
}

// directURL is where the sessions go (LISTEN, the leader's lock,
// migrations): DATABASE_DIRECT_URL, or DATABASE_URL when unset.
func (c *serveConfig) directURL() string {
	if c.DatabaseDirectURL != "" {
		return c.DatabaseDirectURL
	}
	return c.DatabaseURL
}

// pooled tells whether DATABASE_URL is taken for a transaction pooler:
// a DATABASE_DIRECT_URL of its own says so.
func (c *serveConfig) pooled() bool {
	return c.DatabaseDirectURL != "" && c.DatabaseDirectURL != c.DatabaseURL
}

// loadEnv applies the given variables, in order, to a new config.
func loadEnv(getenv func(string) string, vars []envVar) (*serveConfig, error) {
	c := &serveConfig{}
	for _, v := range vars {
		val := strings.TrimSpace(getenv(v.name))
		if val == "" {
			val = v.def
		}
		if err := v.apply(c, val); err != nil {
			var reason badValue
			if errors.As(err, &reason) {
				err = fmt.Errorf("invalid %s %q: %s", v.name, val, reason)
			}
			return nil, usageError{err}
		}
	}
	return c, nil
}

// checkScheme refuses a URL that is not Postgres's (mysql://, http://):
// pgx would report it as a mangled "cannot parse" of the whole string. The
// keyword/value form (host=... dbname=...) has no scheme and passes.
func checkScheme(dsn string) error {
	scheme, _, ok := strings.Cut(dsn, "://")
	if !ok || strings.ContainsAny(scheme, " =") {
		return nil
	}
	switch scheme {
	case "postgres", "postgresql":
		return nil
	}
	if l := strings.ToLower(scheme); l == "postgres" || l == "postgresql" {
		return fmt.Errorf("invalid DATABASE_URL: write the scheme %q in lower case: %s://", scheme, l)
	}
	// Only the scheme is quoted: the rest may hold a password.
	return fmt.Errorf("invalid DATABASE_URL: scheme %q is not Postgres: use postgres://user:password@host:5432/database (or the keyword/value form host=... dbname=...)", scheme)
}

// varsNamed returns the entries of serveVars with the given names, for
// commands that need only some of them (migrate).
func varsNamed(names ...string) []envVar {
	var out []envVar
	for _, n := range names {
		for _, v := range serveVars {
			if v.name == n {
				out = append(out, v)
			}
		}
	}
	return out
}

// badValue is the reason a value was refused; loadServeConfig adds the
// variable's name and the value.
type badValue string

func (r badValue) Error() string { return string(r) }

func durationVar(field func(*serveConfig) *time.Duration) func(*serveConfig, string) error {
	return func(c *serveConfig, v string) error { return parseDuration(v, field(c)) }
}

// parsedVar applies the value parse makes of v to field; when parse
// refuses v (ok false), want says what the value must be.
func parsedVar[T any](want string, parse func(v string) (x T, ok bool), field func(*serveConfig) *T) func(*serveConfig, string) error {
	return func(c *serveConfig, v string) error {
		x, ok := parse(v)
		if !ok {
			return badValue(want)
		}
		*field(c) = x
		return nil
	}
}

func boolVar(field func(*serveConfig) *bool) func(*serveConfig, string) error {
	return parsedVar("must be true or false", func(v string) (bool, bool) {
		b, err := strconv.ParseBool(v)
		return b, err == nil
	}, field)
}

// intVar applies an integer of least or more; want says what it must be.
func intVar(least int, want string, field func(*serveConfig) *int) func(*serveConfig, string) error {
	return parsedVar(want, func(v string) (int, bool) {
		n, err := strconv.Atoi(v)
		return n, err == nil && n >= least
	}, field)
}

// parseDuration parses a positive Go duration ("3s", "1m30s", "168h").
func parseDuration(v string, dst *time.Duration) error {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return badValue("must be a positive duration such as 500ms, 3s, 1m or 168h")
	}
	*dst = d
	return nil
}

func knownLevel(v string) bool {
	switch strings.ToLower(v) {
	case "debug", "info", "warn", "error":
		return true
	}
	return false
}

// defaultInstanceID is hostname-<6 hex digits>: unique per process even
// when two replicas share a hostname, short enough for application_name.
func defaultInstanceID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "chronos"
	}
	if i := strings.IndexByte(host, '.'); i > 0 {
		host = host[:i]
	}
	if len(host) > maxInstanceID-7 {
		host = host[:maxInstanceID-7]
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return host + "-" + hex.EncodeToString(b)
}

// isTerminal reports whether f is a character device (a terminal), which
// decides colour and the default log format.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// checkHostPort accepts host:port with a numeric port (0 picks a free one).
func checkHostPort(v string) error {
	_, port, err := net.SplitHostPort(v)
	if err == nil {
		_, err = strconv.ParseUint(port, 10, 16)
	}
	if err != nil {
		return badValue("must be host:port, e.g. :8080 or 127.0.0.1:8080")
	}
	return nil
}
