package sql

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DB is the Chronos database: a pgx pool and the queries on it.
type DB struct {
	Pool *pgxpool.Pool

	creates createBatcher // coalesces concurrent CreateJob calls
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

// Open connects a pool to dsn. instance becomes the connections'
// application_name, so pg_stat_activity tells instances apart.
func Open(ctx context.Context, dsn, instance string) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open database: parse dsn: %w", err)
	}
	if instance != "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = instance
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = int32(max(minPoolConns, 2*runtime.NumCPU()))
	}
	if !strings.Contains(dsn, "pool_max_conn_idle_time") {
		cfg.MaxConnIdleTime = poolMaxIdleTime
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	return &DB{Pool: pool}, nil
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
	return cfg.ConnConfig, nil
}
