package sql

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
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

// searching reports whether f has a search filter (name prefix,
// substring, labels).
func (f *JobFilter) searching() bool {
	return f.NamePrefix != "" || f.Q != "" || len(f.Labels) > 0
}

// qPattern is f.Q as the ILIKE pattern it stands for: a substring.
func (f *JobFilter) qPattern() string { return "%" + likeEscape(f.Q) + "%" }

// labelKeys are f's label keys in a fixed order.
func (f *JobFilter) labelKeys() []string {
	keys := make([]string, 0, len(f.Labels))
	for k := range f.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
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
		add("(name ILIKE $%d OR description ILIKE $%[1]d)", f.qPattern())
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

// Walking ids (walkJobs): the first window, and the most ids one page
// walks before it asks the indexes instead. A walk reads about 0.2 µs per
// id of job_search (2 cores, 1,000,000 jobs), so the budget bounds a page
// that the indexes must finish at a few milliseconds.
const (
	walkFirst  = 4096
	walkBudget = 32768
)

// searchJobs returns up to n jobs with ids above after that meet f's
// filters (f.searching()), in id order. Both ways give the same jobs as
// the plain filters on jobs (where) would; they differ in what they read,
// which is what the first page at 1,000,000 jobs pays for:
//
//   - labels alone: the intersection of the labels' ranges of job_labels,
//     in job id order (labelJobs). The btree hands each label's jobs over
//     sorted, so a page reads about as many entries as it needs, whether
//     a label matches ten jobs or a third of them.
//   - a substring (q) or a name prefix, with or without labels: walk
//     job_search in id order, testing each job (walkJobs). Matches that
//     are dense (1% of the jobs) fill a page in a few thousand ids; the
//     trigram and name indexes would fetch and sort them all (or, for a
//     prefix, the planner guesses which from a doubtful estimate, and
//     a wrong guess sorts 111,111 jobs). When the walk shows the matches
//     sparse, the rest of the page comes from those indexes (setJobs),
//     for which sparse matches are cheap.
func (db *DB) searchJobs(ctx context.Context, f JobFilter, after int64, n int) ([]*chronos.Job, error) {
	if f.Q == "" && f.NamePrefix == "" {
		return db.labelJobs(ctx, f, after, n)
	}
	return db.walkJobs(ctx, f, after, n)
}

// args numbers query arguments.
type args []any

// add appends v and returns its placeholder.
func (a *args) add(v any) string {
	*a = append(*a, v)
	return fmt.Sprintf("$%d", len(*a))
}

// exec is the query's arguments, to be planned with their values (see
// setJobs).
func (a args) exec() []any { return append([]any{pgx.QueryExecModeExec}, a...) }

// pageOf is the statement that returns the jobs whose ids the materialized
// query m (one column, job_id, at most n rows) picks, in id order: m
// reads the narrow tables, and only the page's rows are read from jobs.
func pageOf(m string) string {
	return "WITH m AS MATERIALIZED (" + m + ") SELECT " + qualified("j", jobColumns) +
		" FROM m JOIN jobs j ON j.id = m.job_id ORDER BY j.id"
}

// labelJobs is searchJobs for labels alone: one range of job_labels per
// label, joined on job_id. The planner, which knows how common each label
// is, picks the one to walk and probes the others; whichever it walks,
// the order is job id.
func (db *DB) labelJobs(ctx context.Context, f JobFilter, after int64, n int) ([]*chronos.Job, error) {
	var a args
	var from, where strings.Builder
	from.WriteString("job_labels l0")
	for i, k := range f.labelKeys() {
		cond := fmt.Sprintf("l%d.key = %s AND l%[1]d.value = %[3]s", i, a.add(k), a.add(f.Labels[k]))
		if i == 0 {
			where.WriteString(cond)
			continue
		}
		fmt.Fprintf(&from, " JOIN job_labels l%d ON l%[1]d.job_id = l0.job_id AND %s", i, cond)
	}
	if f.Enabled != nil {
		// A join, not a probe: when one kind is rare (few paused jobs),
		// the planner may start from jobs_enabled_idx instead.
		fmt.Fprintf(&from, " JOIN jobs e ON e.id = l0.job_id AND e.enabled = %s", a.add(*f.Enabled))
	}
	fmt.Fprintf(&where, " AND l0.job_id > %s", a.add(after))
	m := fmt.Sprintf("SELECT l0.job_id FROM %s WHERE %s ORDER BY l0.job_id LIMIT %s", from.String(), where.String(), a.add(n))
	return db.queryJobs(ctx, pageOf(m), a.exec())
}

// walkJobs is searchJobs by walking job_search in id order, in one
// statement (walkSQL): first a window of walkFirst ids; then, if the
// matches found there say the page fills within walkBudget ids in all,
// the rest of that budget, stopping at the page's last job. A page the
// walk cannot fill (no match in the first window, or too few for the rest
// to fit) is finished by setJobs after the last id walked.
func (db *DB) walkJobs(ctx context.Context, f JobFilter, after int64, n int) ([]*chronos.Job, error) {
	q, a := walkSQL(f, after, n)
	out, err := db.queryJobs(ctx, q, a)
	if err != nil || len(out) >= n {
		return out, err
	}
	// Which windows were walked: the statement's own test, on the first
	// window's matches.
	first := 0
	for _, j := range out {
		if j.ID <= past(after, walkFirst) {
			first++
		}
	}
	lo := past(after, walkFirst)
	if walkOn(first, n) {
		lo = past(after, walkBudget)
	}
	rest, err := db.setJobs(ctx, f, lo, n-len(out))
	if err != nil {
		return nil, err
	}
	return append(out, rest...), nil
}

// past is the id d ids past id, or the largest id when that overflows (a
// cursor may name any positive id).
func past(id, d int64) int64 {
	if id > math.MaxInt64-d {
		return math.MaxInt64
	}
	return id + d
}

// walkOn reports whether a walk goes on past its first window, having
// found first of the n jobs it wants there: some, not all, and few enough
// missing that, as dense further on, they lie within the budget.
func walkOn(first, n int) bool {
	return first >= 1 && first < n && int64(n-first)*walkFirst <= int64(walkBudget-walkFirst)*int64(first)
}

// walkSQL is walkJobs' statement and its arguments. Each window tests the
// jobs of job_search in its id range in id order: the prefix on the name
// as stored, the substring as ILIKE tests it (LIKE on the lower-cased
// copies and pattern: what ILIKE does in a UTF-8 database), each label by
// a probe of job_labels' primary key, enabled by one of jobs'. None of
// these tests can use an index or become a join (the probes are scalar
// subqueries), so the plan is the walk whatever the values, its cost
// bounded by the window however common or rare a match is: unlike the
// other searches it may run from a cached, generic plan, which saves
// planning it every time. The second window runs only when walkOn holds
// (a one-time filter on the first's count).
func walkSQL(f JobFilter, after int64, n int) (string, []any) {
	var a args
	var filters strings.Builder
	if f.NamePrefix != "" {
		fmt.Fprintf(&filters, " AND starts_with(s.name, %s)", a.add(f.NamePrefix))
	}
	if f.Q != "" {
		fmt.Fprintf(&filters, " AND (s.lname LIKE (SELECT lower(%s)) OR s.ldesc LIKE (SELECT lower(%[1]s)))", a.add(f.qPattern()))
	}
	for _, k := range f.labelKeys() {
		fmt.Fprintf(&filters, " AND (SELECT true FROM job_labels l WHERE l.key = %s AND l.value = %s AND l.job_id = s.job_id)",
			a.add(k), a.add(f.Labels[k]))
	}
	if f.Enabled != nil {
		fmt.Fprintf(&filters, " AND (SELECT e.enabled FROM jobs e WHERE e.id = s.job_id) = %s", a.add(*f.Enabled))
	}
	lo, mid, hi, limit := a.add(after), a.add(past(after, walkFirst)), a.add(past(after, walkBudget)), a.add(n)
	first, budget := strconv.Itoa(walkFirst), strconv.Itoa(walkBudget-walkFirst)
	q := `WITH w1 AS MATERIALIZED (
		SELECT s.job_id FROM job_search s WHERE s.job_id > ` + lo + ` AND s.job_id <= ` + mid + filters.String() + `
		 ORDER BY s.job_id LIMIT ` + limit + `
	), c AS (SELECT count(*) AS n FROM w1), w2 AS MATERIALIZED (
		SELECT s.job_id FROM job_search s
		 WHERE (SELECT n >= 1 AND n < ` + limit + ` AND (` + limit + ` - n) * ` + first + ` <= ` + budget + ` * n FROM c)
		   AND s.job_id > ` + mid + ` AND s.job_id <= ` + hi + filters.String() + `
		 ORDER BY s.job_id LIMIT (SELECT ` + limit + ` - n FROM c)
	), m AS (SELECT job_id FROM w1 UNION ALL SELECT job_id FROM w2)
	SELECT ` + qualified("j", jobColumns) + ` FROM m JOIN jobs j ON j.id = m.job_id ORDER BY j.id`
	return q, a
}

// setJobs is searchJobs through the indexes of migration 008 (the name's
// btree, the trigram indexes, the labels' GIN index), as the planner
// combines them: every match is found, then sorted. It finishes a walk
// whose matches are sparse.
//
// It is planned with its values (QueryExecModeExec), never from a generic
// cached plan: a generic plan cannot tell a rare prefix or label from a
// common one, and walking the id index for a rare one reads every job.
func (db *DB) setJobs(ctx context.Context, f JobFilter, after int64, n int) ([]*chronos.Job, error) {
	a := []any{after, n}
	cond := ""
	if f.Enabled != nil {
		a = append(a, *f.Enabled)
		cond = " AND enabled = $3"
	}
	cond += f.where(&a)
	return db.queryJobs(ctx, "SELECT "+jobColumns+" FROM jobs WHERE id > $1"+cond+" ORDER BY id LIMIT $2",
		append([]any{pgx.QueryExecModeExec}, a...))
}

// queryJobs runs a query of jobColumns.
func (db *DB) queryJobs(ctx context.Context, q string, args []any) ([]*chronos.Job, error) {
	if p, ok := ctx.Value(planKey{}).(*plans); ok {
		if err := p.explain(ctx, db, q, args); err != nil {
			return nil, err
		}
	}
	rows, err := db.Pool.Query(ctx, q, args...)
	jobs, err := collect(rows, err, "list jobs", scanJob)
	if err != nil {
		return nil, err
	}
	if err := attachCalendars(ctx, db.Pool, jobs, nil); err != nil {
		return nil, err
	}
	return jobs, nil
}

// plans collects the plan (EXPLAIN ANALYZE) of every query a list runs
// whose context carries it: the search benchmark shows them.
type plans struct{ lines []string }

type planKey struct{}

func (p *plans) explain(ctx context.Context, db *DB, q string, args []any) error {
	rows, err := db.Pool.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS OFF) "+q, args...)
	if err != nil {
		return fmt.Errorf("explain: %w", err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("explain: %w", err)
	}
	p.lines = append(append(p.lines, "-- "+q), lines...)
	return nil
}
