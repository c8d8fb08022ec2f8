package sql

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chronoshq/chronos"
)

// DB is the Chronos database: a pgx pool and the queries on it.
type DB struct {
	Pool *Pool

	creates createBatcher // coalesces concurrent CreateJob calls
	hosts   atomic.Bool   // whether the hosts table exists (hosts.go)
	counted atomic.Bool   // whether limits are counted (migration 034: limits_counted.go)
	vouches atomic.Bool   // whether chronos_materializer exists (migration 036: materialize_ended.go)
}

// Pool sizing when the DSN does not say (pool_max_conns,
// pool_max_conn_idle_time): pgx's default (4 on this machine) is tight for
// a dispatcher whose workers start, renew and complete while the API
// serves requests, but Postgres on a small machine gains nothing from many
// more concurrent queries, and every instance's connections count against
// the server's max_connections. Idle connections go back after a minute.
const (
	minPoolConns    = 8
	poolMaxIdleTime = time.Minute
)

// ConnectTimeout bounds each connection attempt when the DSN does not
// (connect_timeout, or PGCONNECT_TIMEOUT). pgx has no default, and the
// pool builds its connections on a context of its own, not the caller's:
// an attempt that never gets an answer (a server frozen mid-crash, an
// address black-holed by a failover) would hold one of the pool's few
// slots for good, and the instance would starve with its database back.
const ConnectTimeout = 10 * time.Second

// boundConnect gives cfg ConnectTimeout unless dsn or the environment
// chose a timeout (connect_timeout=0, which means none, is kept too).
func boundConnect(cfg *pgx.ConnConfig, dsn string) {
	if cfg.ConnectTimeout == 0 && !strings.Contains(dsn, "connect_timeout") {
		cfg.ConnectTimeout = ConnectTimeout
	}
}

// Options configures OpenWith.
type Options struct {
	// Instance becomes the connections' application_name, so
	// pg_stat_activity tells instances apart (PgBouncer passes it on).
	Instance string
	// AsyncCommit makes the pool's writes commit with synchronous_commit
	// off: every transaction and every single statement sets it for
	// itself (SET LOCAL, see Pool), so it works through a transaction
	// pooler, which forwards no startup parameters and shares server
	// sessions between clients.
	AsyncCommit bool
	// Pooled says the DSN goes through a transaction pooler (PgBouncer in
	// transaction mode): statements are not prepared by name (pgx's
	// QueryExecModeCacheDescribe: unnamed statements, their descriptions
	// cached per connection), since the next transaction may run on
	// another server session. A default_query_exec_mode in the DSN wins.
	Pooled bool
}

// Open connects a pool to dsn. instance becomes the connections'
// application_name, so pg_stat_activity tells instances apart.
func Open(ctx context.Context, dsn, instance string) (*DB, error) {
	return OpenWith(ctx, dsn, Options{Instance: instance})
}

// OpenWith connects a pool to dsn as opts say.
func OpenWith(ctx context.Context, dsn string, opts Options) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open database: parse dsn: %w", err)
	}
	if opts.Instance != "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = opts.Instance
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = int32(max(minPoolConns, 2*runtime.NumCPU()))
	}
	if !strings.Contains(dsn, "pool_max_conn_idle_time") {
		cfg.MaxConnIdleTime = poolMaxIdleTime
	}
	boundConnect(cfg.ConnConfig, dsn)
	if opts.Pooled && !strings.Contains(dsn, "default_query_exec_mode") {
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	}
	cfg.AfterConnect = registerTypes
	if !opts.Pooled && !strings.Contains(dsn, "jit") {
		cfg.AfterConnect = withoutJIT
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	return &DB{Pool: &Pool{Pool: pool, asyncCommit: opts.AsyncCommit}}, nil
}

// registerTypes maps the Go types the queries pass as arguments to their
// Postgres types, so that they encode in every query mode: a mode that
// does not ask the server for the parameters' types (QueryExecModeExec,
// the simple protocol, which DSNs may choose for a pooler) picks the
// type from the Go type alone, and knows none for a map.
func registerTypes(_ context.Context, conn *pgx.Conn) error {
	conn.TypeMap().RegisterDefaultPgType(map[string]string{}, "jsonb")
	conn.TypeMap().RegisterDefaultPgType([]storedSecret{}, "jsonb")
	conn.TypeMap().RegisterDefaultPgType([]chronos.DateRange{}, "jsonb")
	return nil
}

// withoutJIT is registerTypes, then JIT turned off for the session: no
// statement of Chronos's runs long enough for LLVM's compiling to pay,
// and the estimates of many grow with the tables past jit_above_cost
// (a list page or a leader's upkeep would then spend a large part of a
// second compiling each call; the dispatcher's look for a due run once
// spent 750 ms). Only on a connection of its own: behind a transaction
// pooler a session setting would stay on a server session that the pooler
// hands to another client (there the reactors' pool turns JIT off per
// statement, and docs/operations.md suggests the role setting). A DSN
// that says anything of jit is left to say it.
func withoutJIT(ctx context.Context, conn *pgx.Conn) error {
	if err := registerTypes(ctx, conn); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "SET jit = off"); err != nil {
		return fmt.Errorf("turn jit off: %w", err)
	}
	return nil
}

// Close closes the pool.
func (db *DB) Close() { db.Pool.Close() }

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.Pool.Ping(ctx); err != nil {
		return fmt.Errorf("ping database: %w", err)
	}
	return nil
}

// connConfig parses dsn for a single (unpooled) connection. It goes through
// the pool parser so that pool_* settings in a DATABASE_URL shared with the
// pool are understood and stripped, not sent to the server as unknown
// parameters.
func connConfig(dsn string) (*pgx.ConnConfig, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse dsn: %w", err)
	}
	boundConnect(cfg.ConnConfig, dsn)
	return cfg.ConnConfig, nil
}

// BehindPooler tells whether the pool's connections reach a server
// session of their own or go through a pooler: a pooler (PgBouncer)
// announces a backend pid of its own making, not the server's.
func (db *DB) BehindPooler(ctx context.Context) (bool, error) {
	c, err := db.Pool.Acquire(ctx)
	if err != nil {
		return false, fmt.Errorf("check for a pooler: %w", err)
	}
	defer c.Release()
	var pid uint32
	// The simple protocol: no statement is prepared by name, which a
	// transaction pooler could not keep.
	if err := c.QueryRow(ctx, "SELECT pg_backend_pid()", pgx.QueryExecModeSimpleProtocol).Scan(&pid); err != nil {
		return false, fmt.Errorf("check for a pooler: %w", err)
	}
	return pid != c.Conn().PgConn().PID(), nil
}
