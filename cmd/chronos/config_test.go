package main

import (
	"log/slog"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"
)

const goodDSN = "postgres://chronos:chronos@localhost:5432/chronos?sslmode=disable"

func TestLoadServeConfigDefaults(t *testing.T) {
	t.Parallel()
	c, err := loadServeConfig(mapEnv(map[string]string{"DATABASE_URL": goodDSN, "API_KEYS": "k1"}))
	if err != nil {
		t.Fatal(err)
	}
	want := serveConfig{
		DatabaseURL:            goodDSN,
		DatabaseConnectTimeout: 10 * time.Second,
		HTTPAddr:               ":8080",
		WorkerConcurrency:      32,
		ReactorSyncCommit:      false,
		IdlePollInterval:       3 * time.Second,
		LeaseDuration:          30 * time.Second,
		LeaderPollInterval:     time.Second,
		ReaperInterval:         5 * time.Second,
		RunRetention:           168 * time.Hour,
		AuditRetention:         2160 * time.Hour,
		ShutdownTimeout:        25 * time.Second,
		APIKeys:                []string{"k1"},
		LogLevel:               slog.LevelInfo,
		LogFormat:              c.LogFormat, // depends on whether stderr is a terminal
		InstanceID:             c.InstanceID,
		MigrateOnStart:         true,
		RateLimit:              1000,
		RateLimitBurst:         2000,
		MaxTapStreams:          16,
		HostBreakerFailures:    10,
		HostBreakerCooldown:    30 * time.Second,
	}
	if !reflect.DeepEqual(*c, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", *c, want)
	}
	if c.LogFormat != "json" && c.LogFormat != "text" {
		t.Errorf("LogFormat = %q", c.LogFormat)
	}
	if len(c.InstanceID) < 8 || len(c.InstanceID) > maxInstanceID || !strings.Contains(c.InstanceID, "-") {
		t.Errorf("default InstanceID = %q, want hostname-<random>", c.InstanceID)
	}
	c2, _ := loadServeConfig(mapEnv(map[string]string{"DATABASE_URL": goodDSN, "API_KEYS": "k1"}))
	if c2.InstanceID == c.InstanceID {
		t.Errorf("two default instance ids are both %q", c.InstanceID)
	}
}

func TestLoadServeConfigValues(t *testing.T) {
	t.Parallel()
	c, err := loadServeConfig(mapEnv(map[string]string{
		"DATABASE_URL":             "host=db user=chronos dbname=chronos",
		"DATABASE_CONNECT_TIMEOUT": "2s",
		"HTTP_ADDR":                "127.0.0.1:0",
		"TLS_CERT_FILE":            "/etc/chronos/tls.crt",
		"TLS_KEY_FILE":             "/etc/chronos/tls.key",
		"METRICS_ADDR":             "127.0.0.1:9090",
		"WORKER_CONCURRENCY":       " 5 ",
		"IDLE_POLL_INTERVAL":       "1m",
		"LEASE_DURATION":           "10s",
		"LEADER_POLL_INTERVAL":     "250ms",
		"REAPER_INTERVAL":          "2s",
		"RUN_RETENTION":            "24h",
		"SHUTDOWN_TIMEOUT":         "3s",
		"API_KEYS":                 " a, b ,,c ",
		"AUTH_DISABLED":            "false",
		"SIGNING_SECRET":           "s3cret",
		"ALLOW_PRIVATE_TARGETS":    "true",
		"ALLOWED_TARGET_NETWORKS":  "10.20.0.0/16, fd00:1::/48",
		"DEAD_LETTER_WEBHOOK":      "https://hooks.example.com/services/T0/B0/x",
		"RATE_LIMIT":               "2.5",
		"RATE_LIMIT_BURST":         "10",
		"MAX_TAP_STREAMS_PER_KEY":  "0",
		"LOG_LEVEL":                "DEBUG",
		"LOG_FORMAT":               "Text",
		"INSTANCE_ID":              "chronos-1",
		"MIGRATE_ON_START":         "0",
		"HOST_BREAKER_FAILURES":    "0",
		"HOST_BREAKER_COOLDOWN":    "5s",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := serveConfig{
		DatabaseURL:            "host=db user=chronos dbname=chronos",
		DatabaseConnectTimeout: 2 * time.Second,
		HTTPAddr:               "127.0.0.1:0",
		TLSCertFile:            "/etc/chronos/tls.crt",
		TLSKeyFile:             "/etc/chronos/tls.key",
		MetricsAddr:            "127.0.0.1:9090",
		WorkerConcurrency:      5,
		ReactorSyncCommit:      false,
		IdlePollInterval:       time.Minute,
		LeaseDuration:          10 * time.Second,
		LeaderPollInterval:     250 * time.Millisecond,
		ReaperInterval:         2 * time.Second,
		RunRetention:           24 * time.Hour,
		AuditRetention:         2160 * time.Hour,
		ShutdownTimeout:        3 * time.Second,
		APIKeys:                []string{"a", "b", "c"},
		SigningSecret:          "s3cret",
		AllowPrivateTargets:    true,
		AllowedTargetNetworks:  []netip.Prefix{netip.MustParsePrefix("10.20.0.0/16"), netip.MustParsePrefix("fd00:1::/48")},
		DeadLetterWebhook:      "https://hooks.example.com/services/T0/B0/x",
		RateLimit:              2.5,
		RateLimitBurst:         10,
		LogLevel:               slog.LevelDebug,
		LogFormat:              "text",
		InstanceID:             "chronos-1",
		MigrateOnStart:         false,
		HostBreakerFailures:    0,
		HostBreakerCooldown:    5 * time.Second,
	}
	if !reflect.DeepEqual(*c, want) {
		t.Errorf("\n got %+v\nwant %+v", *c, want)
	}

	c, err = loadServeConfig(mapEnv(map[string]string{"DATABASE_URL": goodDSN, "AUTH_DISABLED": "true"}))
	if err != nil || !c.AuthDisabled || len(c.APIKeys) != 0 {
		t.Errorf("AUTH_DISABLED=true without keys: %+v, %v", c, err)
	}
}

func TestLoadServeConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, value string
		want        string // the whole message
	}{
		{"WORKER_CONCURRENCY", "abc", `invalid WORKER_CONCURRENCY "abc": must be a positive integer`},
		{"WORKER_CONCURRENCY", "0", `invalid WORKER_CONCURRENCY "0": must be a positive integer`},
		{"WORKER_CONCURRENCY", "-3", `invalid WORKER_CONCURRENCY "-3": must be a positive integer`},
		{"REACTOR_SYNCHRONOUS_COMMIT", "false", `invalid REACTOR_SYNCHRONOUS_COMMIT "false": must be on or off`},
		{"REACTOR_SYNCHRONOUS_COMMIT", "local", `invalid REACTOR_SYNCHRONOUS_COMMIT "local": must be on or off`},
		{"IDLE_POLL_INTERVAL", "3", `invalid IDLE_POLL_INTERVAL "3": must be a positive duration such as 500ms, 3s, 1m or 168h`},
		{"LEASE_DURATION", "-1s", `invalid LEASE_DURATION "-1s": must be a positive duration such as 500ms, 3s, 1m or 168h`},
		{"LEADER_POLL_INTERVAL", "0s", `invalid LEADER_POLL_INTERVAL "0s": must be a positive duration such as 500ms, 3s, 1m or 168h`},
		{"REAPER_INTERVAL", "soon", `invalid REAPER_INTERVAL "soon": must be a positive duration such as 500ms, 3s, 1m or 168h`},
		{"RUN_RETENTION", "7d", `invalid RUN_RETENTION "7d": must be a positive duration such as 500ms, 3s, 1m or 168h`},
		{"SHUTDOWN_TIMEOUT", "x", `invalid SHUTDOWN_TIMEOUT "x": must be a positive duration such as 500ms, 3s, 1m or 168h`},
		{"DATABASE_CONNECT_TIMEOUT", "1", `invalid DATABASE_CONNECT_TIMEOUT "1": must be a positive duration such as 500ms, 3s, 1m or 168h`},
		{"HTTP_ADDR", "8080", `invalid HTTP_ADDR "8080": must be host:port, e.g. :8080 or 127.0.0.1:8080`},
		{"HTTP_ADDR", ":http-alt", `invalid HTTP_ADDR ":http-alt": must be host:port, e.g. :8080 or 127.0.0.1:8080`},
		{"HTTP_ADDR", ":70000", `invalid HTTP_ADDR ":70000": must be host:port, e.g. :8080 or 127.0.0.1:8080`},
		{"AUTH_DISABLED", "yes", `invalid AUTH_DISABLED "yes": must be true or false`},
		{"ALLOW_PRIVATE_TARGETS", "on", `invalid ALLOW_PRIVATE_TARGETS "on": must be true or false`},
		{"ALLOWED_TARGET_NETWORKS", "10.0.0.0/8,intranet", `invalid ALLOWED_TARGET_NETWORKS "10.0.0.0/8,intranet": "intranet" is not a CIDR such as 10.1.0.0/16`},
		{"RATE_LIMIT", "-1", `invalid RATE_LIMIT "-1": must be a number of requests per second, 0 or more`},
		{"RATE_LIMIT_BURST", "0", `invalid RATE_LIMIT_BURST "0": must be a positive integer`},
		{"MAX_TAP_STREAMS_PER_KEY", "many", `invalid MAX_TAP_STREAMS_PER_KEY "many": must be a non-negative integer`},
		{"METRICS_ADDR", "9090", `invalid METRICS_ADDR "9090": must be host:port, e.g. :8080 or 127.0.0.1:8080`},
		{"TLS_CERT_FILE", "/etc/tls.crt", `TLS_CERT_FILE and TLS_KEY_FILE go together: set both for HTTPS, or neither`},
		{"TLS_KEY_FILE", "/etc/tls.key", `TLS_CERT_FILE and TLS_KEY_FILE go together: set both for HTTPS, or neither`},
		{"METRICS_ADDR", ":8080", `METRICS_ADDR ":8080" is HTTP_ADDR: leave METRICS_ADDR empty to serve /metrics on the API's address`},
		{"MIGRATE_ON_START", "nope", `invalid MIGRATE_ON_START "nope": must be true or false`},
		{"LOG_LEVEL", "verbose", `invalid LOG_LEVEL "verbose": must be debug, info, warn or error`},
		{"LOG_LEVEL", "info+2", `invalid LOG_LEVEL "info+2": must be debug, info, warn or error`},
		{"LOG_FORMAT", "xml", `invalid LOG_FORMAT "xml": must be json or text`},
		{"INSTANCE_ID", "has space", `invalid INSTANCE_ID "has space": must be at most 63 printable ASCII characters without spaces`},
		{"INSTANCE_ID", strings.Repeat("x", 64), `invalid INSTANCE_ID "` + strings.Repeat("x", 64) + `": must be at most 63 printable ASCII characters without spaces`},
		{"DATABASE_URL", "", `DATABASE_URL is required, e.g. postgres://chronos:chronos@localhost:5433/chronos?sslmode=disable`},
	} {
		env := map[string]string{"DATABASE_URL": goodDSN, "API_KEYS": "k1", tc.name: tc.value}
		_, err := loadServeConfig(mapEnv(env))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s=%q: error %v\nwant %s", tc.name, tc.value, err, tc.want)
		}
		if _, ok := err.(usageError); !ok {
			t.Errorf("%s=%q: %T is not a usage error (exit code 2)", tc.name, tc.value, err)
		}
	}

	// A DSN pgx cannot parse is named, and its password never echoed.
	_, err := loadServeConfig(mapEnv(map[string]string{"DATABASE_URL": "postgres://u:hunter2@host:notaport/db", "API_KEYS": "k"}))
	if err == nil || !strings.HasPrefix(err.Error(), "invalid DATABASE_URL: ") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("bad DATABASE_URL: %v", err)
	}
	// Another database's URL says the scheme is wrong, password unsaid.
	for _, dsn := range []string{"mysql://root:hunter2@db:3306/app", "MySQL://root:hunter2@db/app", "http://hunter2@db/"} {
		scheme, _, _ := strings.Cut(dsn, "://")
		_, err = loadServeConfig(mapEnv(map[string]string{"DATABASE_URL": dsn, "API_KEYS": "k"}))
		if err == nil || !strings.HasPrefix(err.Error(), `invalid DATABASE_URL: scheme "`+scheme+`" is not Postgres`) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("DATABASE_URL=%s: %v", dsn, err)
		}
		if _, ok := err.(usageError); !ok {
			t.Errorf("DATABASE_URL=%s: %T is not a usage error", dsn, err)
		}
	}
	if _, err := loadServeConfig(mapEnv(map[string]string{"DATABASE_URL": "POSTGRES://u@h/db", "API_KEYS": "k"})); err == nil || !strings.Contains(err.Error(), "lower case") {
		t.Errorf("DATABASE_URL=POSTGRES://...: %v", err)
	}
	for _, dsn := range []string{"postgresql://u@h/db", "host=h dbname=db password=a://b"} {
		if _, err := loadServeConfig(mapEnv(map[string]string{"DATABASE_URL": dsn, "API_KEYS": "k"})); err != nil {
			t.Errorf("DATABASE_URL=%s: %v", dsn, err)
		}
	}
	// DEAD_LETTER_WEBHOOK follows target_url's rules and the address
	// policy, and its value (which may hold a token) is never echoed.
	for _, tc := range []struct{ url, private, want string }{
		{"ftp://hooks.example.com/T0ken", "", "invalid DEAD_LETTER_WEBHOOK: scheme must be http or https"},
		{"https://u:T0ken@hooks.example.com/", "", "invalid DEAD_LETTER_WEBHOOK: must not carry credentials; use headers"},
		{"http://10.1.2.3/T0ken", "", "invalid DEAD_LETTER_WEBHOOK: "},
		{"http://169.254.169.254/T0ken", "true", "invalid DEAD_LETTER_WEBHOOK: address 169.254.169.254 is a cloud metadata or credential endpoint (169.254.0.0/16) and is never allowed"},
	} {
		_, err := loadServeConfig(mapEnv(map[string]string{"DATABASE_URL": goodDSN, "API_KEYS": "k",
			"DEAD_LETTER_WEBHOOK": tc.url, "ALLOW_PRIVATE_TARGETS": tc.private}))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "T0ken") {
			t.Errorf("DEAD_LETTER_WEBHOOK=%s: %v, want %s...", tc.url, err, tc.want)
		}
		if _, ok := err.(usageError); !ok {
			t.Errorf("DEAD_LETTER_WEBHOOK=%s: %T is not a usage error", tc.url, err)
		}
	}
	if c, err := loadServeConfig(mapEnv(map[string]string{"DATABASE_URL": goodDSN, "API_KEYS": "k",
		"DEAD_LETTER_WEBHOOK": "http://10.1.2.3/hook", "ALLOWED_TARGET_NETWORKS": "10.1.0.0/16"})); err != nil || c.DeadLetterWebhook != "http://10.1.2.3/hook" {
		t.Errorf("DEAD_LETTER_WEBHOOK in ALLOWED_TARGET_NETWORKS: %+v, %v", c, err)
	}
	// No keys and auth not explicitly disabled: refuse.
	_, err = loadServeConfig(mapEnv(map[string]string{"DATABASE_URL": goodDSN, "API_KEYS": " , "}))
	if err == nil || !strings.Contains(err.Error(), "API_KEYS") || !strings.Contains(err.Error(), "AUTH_DISABLED=true") {
		t.Errorf("no API keys: %v", err)
	}
}

func mapEnv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestReactorSynchronousCommit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value string
		want  bool
	}{{"", false}, {"on", true}, {" On ", true}, {"off", false}, {"OFF", false}} {
		c, err := loadServeConfig(mapEnv(map[string]string{"DATABASE_URL": goodDSN, "API_KEYS": "k1", "REACTOR_SYNCHRONOUS_COMMIT": tc.value}))
		if err != nil {
			t.Errorf("REACTOR_SYNCHRONOUS_COMMIT=%q: %v", tc.value, err)
			continue
		}
		if c.ReactorSyncCommit != tc.want {
			t.Errorf("REACTOR_SYNCHRONOUS_COMMIT=%q: ReactorSyncCommit = %v, want %v", tc.value, c.ReactorSyncCommit, tc.want)
		}
	}
}
