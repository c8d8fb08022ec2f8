package sql

import (
	"context"
	"fmt"
	"runtime"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// DB is the Chronos database: a pgx pool and the queries on it.
type DB struct {
	Pool *pgxpool.Pool
}

// minPoolConns is the pool size when the DSN does not set pool_max_conns:
// pgx's default (4 on this machine) is too small for a dispatcher whose
// workers each start, renew and complete while the API serves requests.
const minPoolConns = 16

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
		cfg.MaxConns = int32(max(minPoolConns, 4*runtime.NumCPU()))
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
