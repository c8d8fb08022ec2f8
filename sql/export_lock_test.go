package sql

import (
	"context"
	"fmt"
	"io/fs"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
)

// MigrateTo applies the embedded migrations to dsn up to version only:
// for testing an upgrade from an older schema with data in it.
func MigrateTo(ctx context.Context, dsn string, version int32) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	m, err := migrate.NewMigrator(ctx, conn, versionTable)
	if err != nil {
		return err
	}
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	if err := m.LoadMigrations(sub); err != nil {
		return err
	}
	return m.MigrateTo(ctx, version)
}

// claimScanNode is the first line of a plan node that reads job_runs or
// one of its partitions, as the claim's alias r (r_1, r_2, ... once
// partitioned). Its index, if any, is group 2.
var claimScanNode = regexp.MustCompile(`^\s*(?:->\s+)?(Index Scan|Index Only Scan|Seq Scan|Bitmap Heap Scan)(?: Backward)?(?: using (\S+))? on (job_runs\w*) r(?:_\d+)? \(actual rows=(\d+) loops=(\d+)\)`)

// claimableIndex names job_runs_claimable_idx and its copies on the
// partitions: named after it on the legacy partition (the table it was
// built on), after its columns on the others (CREATE TABLE ... PARTITION
// OF and ATTACH PARTITION name them so).
var claimableIndex = regexp.MustCompile(`^job_runs\w*_(claimable_idx|available_at_id_idx\d*)$`)

var (
	removedByFilter  = regexp.MustCompile(`Rows Removed by (?:Filter|Index Recheck): (\d+)`)
	bitmapIndexChild = regexp.MustCompile(`Bitmap Index Scan on (\S+)`)
)

// ClaimIndexReads runs a claim of n runs under EXPLAIN ANALYZE, rolled
// back, and returns how many rows of job_runs the claim's pick read: in
// every partition, the rows each scan returned plus those its filter
// removed. At least one of the scans must walk the claimable index (or a
// partition's copy of it); a partition read otherwise (a seq scan of an
// empty one) counts with every row it read, so held runs read anywhere
// count.
func ClaimIndexReads(ctx context.Context, db *DB, n int) (int, error) {
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // always rolled back
	rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "+claimSQL,
		"explain", n, int64(60_000_000), int64(0))
	if err != nil {
		return 0, err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, err
	}
	text := strings.Join(lines, "\n")
	// Only the pick (CTE picked) walks the queue; the CTEs after it
	// fetch the picked runs by id.
	var pick []string
	in := false
	for _, l := range lines {
		switch t := strings.TrimSpace(l); {
		case t == "CTE picked":
			in = true
			continue
		case strings.HasPrefix(t, "CTE "):
			in = false
		}
		if in {
			pick = append(pick, l)
		}
	}
	read, walked := 0, false
	for i := 0; i < len(pick); i++ {
		m := claimScanNode.FindStringSubmatch(pick[i])
		if m == nil {
			continue
		}
		got, _ := strconv.Atoi(m[4])
		loops, _ := strconv.Atoi(m[5])
		removed := 0
		index := m[2]
		// The node's details, up to its first child or subplan.
		for j := i + 1; j < len(pick); j++ {
			t := strings.TrimSpace(pick[j])
			if b := bitmapIndexChild.FindStringSubmatch(t); b != nil && m[1] == "Bitmap Heap Scan" && index == "" {
				index = b[1]
			}
			if strings.HasPrefix(t, "->") || strings.HasPrefix(t, "SubPlan") || strings.HasPrefix(t, "InitPlan") {
				if m[1] != "Bitmap Heap Scan" || index != "" {
					break
				}
				continue
			}
			if r := removedByFilter.FindStringSubmatch(t); r != nil {
				k, _ := strconv.Atoi(r[1])
				removed += k
			}
		}
		if claimableIndex.MatchString(index) {
			walked = true
		}
		read += (got + removed) * max(loops, 1)
	}
	if !walked {
		return 0, fmt.Errorf("no scan of job_runs_claimable_idx (or a partition's copy) in the claim's plan:\n%s", text)
	}
	return read, nil
}
