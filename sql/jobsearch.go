package sql

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/chronoshq/chronos"
	"github.com/jackc/pgx/v5"
)

// labelsArg sends a job's labels as a JSON object (never null).
func labelsArg(j *chronos.Job) any {
	if j.Labels == nil {
		return map[string]string{}
	}
	return j.Labels
}

// where appends the conditions of the search filters (name prefix,
// substring, labels) on the jobs table to args, each " AND ..." backed by
// an index of migration 008.
func (f *JobFilter) where(args *[]any) string {
	var b strings.Builder
	add := func(cond string, vals ...any) {
		idx := make([]any, len(vals))
		for i, v := range vals {
			*args = append(*args, v)
			idx[i] = len(*args)
		}
		b.WriteString(" AND ")
		fmt.Fprintf(&b, cond, idx...)
	}
	if f.NamePrefix != "" {
		// Bytewise range on jobs_name_key (text_pattern_ops), which a
		// prepared statement's generic plan can use, unlike LIKE $n; the
		// left() test makes it exact. U+10FFFF sorts after every character
		// but itself.
		add("name ~>=~ $%d AND name ~<~ $%d AND left(name, length($%[1]d)) = $%[1]d",
			f.NamePrefix, f.NamePrefix+"\U0010FFFF")
	}
	if f.Q != "" {
		add("(name ILIKE $%d OR description ILIKE $%[1]d)", "%"+likeEscape(f.Q)+"%")
	}
	if len(f.Labels) > 0 {
		sel, _ := json.Marshal(f.Labels) // a map of strings always marshals
		add("labels @> $%d::jsonb", string(sel))
	}
	return b.String()
}

// likeEscape quotes LIKE's wildcards and its escape character.
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// searchJobs returns up to args[1] jobs with ids above args[0] that meet
// cond, in id order. It is planned with its values (QueryExecModeExec),
// never from a generic cached plan: a generic plan cannot tell a rare
// prefix or label from a common one, and walking the id index for a rare
// one reads every job. (A bounded walk of the next ids before asking the
// indexes was tried and measured slower: ILIKE over 10,000 rows costs more
// than the misestimated index paths it avoids.)
func (db *DB) searchJobs(ctx context.Context, cond string, args []any) ([]*chronos.Job, error) {
	return db.queryJobs(ctx, "SELECT "+jobColumns+" FROM jobs WHERE id > $1"+cond+" ORDER BY id LIMIT $2",
		append([]any{pgx.QueryExecModeExec}, args...))
}

// queryJobs runs a query of jobColumns.
func (db *DB) queryJobs(ctx context.Context, q string, args []any) ([]*chronos.Job, error) {
	rows, err := db.Pool.Query(ctx, q, args...)
	if err != nil {
		return nil, mapErr(err, "list jobs")
	}
	jobs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*chronos.Job, error) { return scanJob(r) })
	if err != nil {
		return nil, mapErr(err, "list jobs")
	}
	return jobs, nil
}
