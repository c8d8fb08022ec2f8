package sql

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
)

// OnlineIndexesHeader, on a line of its own, makes a migration a list of
// CREATE [UNIQUE] INDEX statements built without blocking writes, on
// partitioned tables too, where CREATE INDEX CONCURRENTLY does not exist:
// for a partitioned table the index is created ON ONLY the parent
// (catalog only, invalid), then built CONCURRENTLY on each partition and
// attached, which makes the parent valid once every partition has its
// own; a partition created meanwhile (partition upkeep) is picked up by
// the next pass. A plain table gets CREATE INDEX CONCURRENTLY. Each
// statement ends with a semicolon at the end of a line; the file holds
// nothing else but comments. Every step is idempotent, so a retry (a lock
// timeout) or a crash midway runs the migration again from the start.
const OnlineIndexesHeader = "-- chronos:online-indexes"

// onlineIndexRE reads one statement of such a migration.
var onlineIndexRE = regexp.MustCompile(`(?is)^CREATE\s+(UNIQUE\s+)?INDEX\s+(\w+)\s+ON\s+(\w+)\s+(.+)$`)

// onlineIndex is one CREATE INDEX of an online-indexes migration.
type onlineIndex struct {
	unique      string // "UNIQUE " or ""
	name, table string
	rest        string // the columns and WHERE clause
}

// parseOnlineIndexes reads an online-indexes migration.
func parseOnlineIndexes(name, text string) ([]onlineIndex, error) {
	var out []onlineIndex
	var stmt strings.Builder
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "--") {
			continue
		}
		stmt.WriteString(line)
		stmt.WriteString("\n")
		if !strings.HasSuffix(trimmed, ";") {
			continue
		}
		s := strings.TrimSuffix(strings.TrimSpace(stmt.String()), ";")
		stmt.Reset()
		m := onlineIndexRE.FindStringSubmatch(s)
		if m == nil {
			return nil, fmt.Errorf("migration %s: %s holds CREATE INDEX statements only, not %q", name, OnlineIndexesHeader, s)
		}
		out = append(out, onlineIndex{unique: strings.ToUpper(m[1]), name: m[2], table: m[3], rest: m[4]})
	}
	if strings.TrimSpace(stmt.String()) != "" {
		return nil, fmt.Errorf("migration %s: a statement without its closing semicolon: %q", name, stmt.String())
	}
	return out, nil
}

// onlineIndexMigrations turns each online-indexes migration into a Go
// migration run outside a transaction.
func onlineIndexMigrations(migs []*migrate.Migration) error {
	for _, mig := range migs {
		if !hasLine(mig.UpSQL, OnlineIndexesHeader) {
			continue
		}
		idx, err := parseOnlineIndexes(mig.Name, mig.UpSQL)
		if err != nil {
			return err
		}
		mig.UpSQL = ""
		mig.DisableFuncTx = true
		mig.UpFunc = func(ctx context.Context, conn *pgx.Conn) error {
			for _, ix := range idx {
				if err := ix.build(ctx, conn); err != nil {
					return fmt.Errorf("migration %s: index %s: %w", mig.Name, ix.name, err)
				}
			}
			return nil
		}
	}
	return nil
}

// hasLine tells whether text has line (trimmed) as a line of its own.
func hasLine(text, line string) bool {
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}

// build creates ix without blocking the table's writes.
func (ix onlineIndex) build(ctx context.Context, conn *pgx.Conn) error {
	var partitioned bool
	if err := conn.QueryRow(ctx, `SELECT relkind = 'p' FROM pg_class WHERE oid = $1::regclass`, ix.table).Scan(&partitioned); err != nil {
		return fmt.Errorf("read table %s: %w", ix.table, err)
	}
	if !partitioned {
		if err := dropInvalidIndex(ctx, conn, ix.name); err != nil {
			return err
		}
		_, err := conn.Exec(ctx, fmt.Sprintf("CREATE %sINDEX CONCURRENTLY IF NOT EXISTS %s ON %s %s", ix.unique, ix.name, ix.table, ix.rest))
		return err
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE %sINDEX IF NOT EXISTS %s ON ONLY %s %s", ix.unique, ix.name, ix.table, ix.rest)); err != nil {
		return err
	}
	// Passes until every partition has its index: one created meanwhile
	// may or may not have been given one by its CREATE TABLE.
	for pass := 1; ; pass++ {
		parts, err := partitionsWithoutIndex(ctx, conn, ix.table, ix.name)
		if err != nil {
			return err
		}
		if len(parts) == 0 {
			return nil
		}
		if pass > 10 {
			return fmt.Errorf("partitions still without the index after %d passes: %v", pass-1, parts)
		}
		for _, p := range parts {
			child := fmt.Sprintf("%s_%d", ix.name, p.oid)
			if err := dropInvalidIndex(ctx, conn, child); err != nil {
				return err
			}
			if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE %sINDEX CONCURRENTLY IF NOT EXISTS %s ON %s %s",
				ix.unique, child, pgx.Identifier{p.name}.Sanitize(), ix.rest)); err != nil {
				return err
			}
			if _, err := conn.Exec(ctx, fmt.Sprintf("ALTER INDEX %s ATTACH PARTITION %s", ix.name, child)); err != nil {
				return err
			}
		}
	}
}

// partition is a partition of a table.
type partition struct {
	oid  uint32
	name string
}

// partitionsWithoutIndex lists table's partitions that have no index
// attached to parent yet.
func partitionsWithoutIndex(ctx context.Context, conn *pgx.Conn, table, parent string) ([]partition, error) {
	rows, err := conn.Query(ctx, `
		SELECT c.oid, c.relname
		  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		 WHERE i.inhparent = $1::regclass
		   AND NOT EXISTS (SELECT 1 FROM pg_index x JOIN pg_inherits xi ON xi.inhrelid = x.indexrelid
		                    WHERE x.indrelid = c.oid AND xi.inhparent = $2::regclass)
		 ORDER BY c.oid`, table, parent)
	if err != nil {
		return nil, fmt.Errorf("list partitions of %s: %w", table, err)
	}
	parts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (partition, error) {
		var p partition
		return p, r.Scan(&p.oid, &p.name)
	})
	if err != nil {
		return nil, fmt.Errorf("list partitions of %s: %w", table, err)
	}
	return parts, nil
}

// dropInvalidIndex drops name if a failed CONCURRENTLY build left it
// invalid (IF NOT EXISTS would otherwise keep it as it is).
func dropInvalidIndex(ctx context.Context, conn *pgx.Conn, name string) error {
	var invalid bool
	err := conn.QueryRow(ctx, `SELECT NOT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)`, name).Scan(&invalid)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !invalid) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read index %s: %w", name, err)
	}
	if _, err := conn.Exec(ctx, "DROP INDEX CONCURRENTLY IF EXISTS "+name); err != nil {
		return fmt.Errorf("drop the invalid index %s: %w", name, err)
	}
	return nil
}
