package bench

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// statSampler reads the database's statement (or transaction) counter
// from a connection of its own, to the server's maintenance database when
// the bench owns the server's database, so its own reads are not counted.
type statSampler struct {
	conn   *pgx.Conn
	db     string
	source string // "pg_stat_statements" or "pg_stat_database"
	unit   string
	own    float64 // sampling statements counted in the delta
}

func newStatSampler(ctx context.Context, e *env) (*statSampler, error) {
	dsn, own := e.dsn, 1.0
	if e.admin != "" {
		dsn, own = e.admin, 0
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("stats connection: %w", err)
	}
	s := &statSampler{conn: conn, db: e.dbName, source: "pg_stat_database", unit: "xacts", own: own}
	var calls float64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_statements").Scan(&calls); err == nil {
		s.source, s.unit = "pg_stat_statements", "stmts"
	}
	return s, nil
}

func (s *statSampler) sample(ctx context.Context) (float64, error) {
	// Statistics are cached per transaction; each sample is its own.
	var v float64
	var err error
	if s.source == "pg_stat_statements" {
		err = s.conn.QueryRow(ctx, `
			SELECT coalesce(sum(calls), 0)::float8 FROM pg_stat_statements
			 WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)`, s.db).Scan(&v)
	} else {
		err = s.conn.QueryRow(ctx, `
			SELECT (xact_commit + xact_rollback)::float8 FROM pg_stat_database WHERE datname = $1`, s.db).Scan(&v)
	}
	if err != nil {
		return 0, fmt.Errorf("sample %s: %w", s.source, err)
	}
	return v, nil
}

func (s *statSampler) close() { _ = s.conn.Close(context.Background()) }
