package sql

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// SchemaLevel is this binary's schema level: the number of the newest
// migration it embeds. The schema records the lowest level allowed to
// lead and to materialize (migration 017, table chronos_compat).
func SchemaLevel() int {
	levelOnce.Do(func() {
		entries, err := fs.ReadDir(migrationFiles, "migrations")
		if err != nil {
			panic(fmt.Sprintf("read embedded migrations: %v", err)) // cannot happen: embedded
		}
		for _, e := range entries {
			num, _, _ := strings.Cut(e.Name(), "_")
			if n, err := strconv.Atoi(num); err == nil && n > level {
				level = n
			}
		}
	})
	return level
}

var (
	levelOnce sync.Once
	level     int
)

// Compat is what the schema requires of a binary (table chronos_compat).
type Compat struct {
	MinLeadLevel        int
	MinMaterializeLevel int
	Reason              string
}

// TooOldError says that this binary is older than the schema allows to
// lead or materialize.
type TooOldError struct {
	Level  int // this binary's SchemaLevel
	Compat Compat
}

func (e *TooOldError) Error() string {
	return fmt.Sprintf("this binary (schema level %d) is older than the database's schema allows to lead and materialize "+
		"(level %d to lead, %d to materialize: %s): upgrade it; until then it only delivers runs",
		e.Level, e.Compat.MinLeadLevel, e.Compat.MinMaterializeLevel, e.Compat.Reason)
}

// Check returns a *TooOldError when level may not lead or materialize.
func (c Compat) Check(level int) error {
	if level < c.MinLeadLevel || level < c.MinMaterializeLevel {
		return &TooOldError{Level: level, Compat: c}
	}
	return nil
}

// compatSQL reads the minimum; a schema from before migration 017 (the
// table missing) requires nothing.
const compatSQL = `SELECT min_lead_level, min_materialize_level, reason FROM chronos_compat`

// readCompat reads the minimum on q.
func readCompat(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (Compat, error) {
	var c Compat
	err := q.QueryRow(ctx, compatSQL).Scan(&c.MinLeadLevel, &c.MinMaterializeLevel, &c.Reason)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" { // undefined_table: not migrated that far
		return Compat{}, nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return Compat{}, nil
	}
	if err != nil {
		return Compat{}, fmt.Errorf("read schema compatibility: %w", err)
	}
	return c, nil
}

// CheckCompat returns a *TooOldError when this binary may not lead or
// materialize on db's schema.
func (db *DB) CheckCompat(ctx context.Context) error {
	c, err := readCompat(ctx, db.Pool)
	if err != nil {
		return err
	}
	return c.Check(SchemaLevel())
}

// RegisterInstance records (or refreshes) instance's version, so that
// /readyz and the console can show it, and deletes rows of instances not
// seen for a day. It returns the schema's minimum on the way.
func (db *DB) RegisterInstance(ctx context.Context, instance, version string) (Compat, error) {
	_, err := db.Pool.Exec(ctx, `
		WITH gone AS (DELETE FROM chronos_instances WHERE seen_at < now() - interval '1 day' AND instance <> $1)
		INSERT INTO chronos_instances (instance, version, schema_level) VALUES ($1, $2, $3)
		ON CONFLICT (instance) DO UPDATE
		   SET version = excluded.version, schema_level = excluded.schema_level, seen_at = now(),
		       started_at = CASE WHEN chronos_instances.version = excluded.version
		                         THEN chronos_instances.started_at ELSE now() END`,
		instance, version, SchemaLevel())
	if err != nil {
		return Compat{}, fmt.Errorf("register instance %s: %w", instance, err)
	}
	return readCompat(ctx, db.Pool)
}

// Instance is a running instance as /readyz and the console show it.
type Instance struct {
	Name        string    `json:"instance"`
	Version     string    `json:"version"`      // "" when it did not register (older than migration 017)
	SchemaLevel int       `json:"schema_level"` // 0 when unknown
	Leader      bool      `json:"leader"`
	StartedAt   time.Time `json:"started_at,omitzero"`
}

// Instances lists the instances connected now (each holds one LISTEN
// connection named <instance>-listener), with their registered versions
// and which one holds the leader's lock.
func (db *DB) Instances(ctx context.Context) ([]Instance, error) {
	rows, err := db.Pool.Query(ctx, `
		WITH live AS (
			SELECT DISTINCT left(application_name, -length('-listener')) AS instance
			  FROM pg_stat_activity
			 WHERE datname = current_database() AND application_name LIKE '%-listener'),
		leader AS (
			SELECT a.application_name AS instance
			  FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			 WHERE l.locktype = 'advisory' AND l.granted
			   AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
			   AND l.classid = $1 AND l.objid = $2 AND l.objsubid = 1)
		SELECT n.instance, COALESCE(i.version, ''), COALESCE(i.schema_level, 0), i.started_at,
		       EXISTS (SELECT 1 FROM leader WHERE leader.instance = n.instance)
		  FROM (SELECT instance FROM live UNION SELECT instance FROM leader) n
		  LEFT JOIN chronos_instances i USING (instance)
		 ORDER BY n.instance`, leaderKey.classID(), leaderKey.objID())
	if err != nil {
		return nil, fmt.Errorf("list instances: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Instance, error) {
		var in Instance
		var started *time.Time
		err := r.Scan(&in.Name, &in.Version, &in.SchemaLevel, &started, &in.Leader)
		if started != nil {
			in.StartedAt = started.UTC()
		}
		return in, err
	})
	if err != nil {
		return nil, fmt.Errorf("list instances: %w", err)
	}
	return out, nil
}
