package sql_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// oracle is what a search must return: every job, in id order, that the
// plain filters on jobs (migration 008's semantics) select.
func oracle(t *testing.T, db *sql.DB, f sql.JobFilter) []int64 {
	t.Helper()
	q := `SELECT id FROM jobs WHERE true`
	var a []any
	arg := func(v any) string { a = append(a, v); return fmt.Sprintf("$%d", len(a)) }
	if f.NamePrefix != "" {
		p := arg(f.NamePrefix)
		q += " AND left(name, length(" + p + ")) = " + p
	}
	if f.Q != "" {
		p := arg("%" + likeQuote(f.Q) + "%")
		q += " AND (name ILIKE " + p + " OR description ILIKE " + p + ")"
	}
	if len(f.Labels) > 0 {
		b, _ := json.Marshal(f.Labels)
		q += " AND labels @> " + arg(string(b)) + "::jsonb"
	}
	if f.Enabled != nil {
		q += " AND enabled = " + arg(*f.Enabled)
	}
	rows, err := db.Pool.Query(context.Background(), q+" ORDER BY id", a...)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func likeQuote(s string) string {
	out := []rune{}
	for _, r := range s {
		if r == '\\' || r == '%' || r == '_' {
			out = append(out, '\\')
		}
		out = append(out, r)
	}
	return string(out)
}

// walkAll pages through a search with the given page size, at most
// pages pages (0: all).
func walkAll(t *testing.T, db *sql.DB, f sql.JobFilter, limit, pages int) []int64 {
	t.Helper()
	f.Limit = limit
	var out []int64
	for n := 1; ; n++ {
		page, next, err := db.Jobs(context.Background(), f)
		if err != nil {
			t.Fatalf("%+v: %v", f, err)
		}
		for _, j := range page {
			out = append(out, j.ID)
		}
		if next == "" || n == pages {
			return out
		}
		f.Cursor = next
	}
}

// TestSearchMatchesThePlainFilters: whatever way a search takes (the label
// index, the walk of job_search in its windows, the indexes after a
// sparse walk), it returns exactly the jobs the plain filters on jobs
// select, in id order, page after page; and the search tables follow
// every create, update and delete of a job. The jobs span more ids than
// a walk's budget, with matches dense, sparse and absent, names and
// descriptions in mixed case and with LIKE's special characters.
func TestSearchMatchesThePlainFilters(t *testing.T) {
	db, ctx := parallelDB(t)
	// 40,000 jobs in one statement (the insert trigger copies them in two);
	// a rare word every 9,973 jobs, a special one every 2,500.
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO jobs (name, description, labels, cron_expr, target_url, next_run_at, enabled)
		SELECT CASE WHEN g % 2500 = 0 THEN 'Spé_50%-' ELSE 'job-' END || g,
		       'Settles batch ' || g || ' for TEAM-' || (g % 100) || CASE WHEN g % 9973 = 0 THEN ' ZanZibar' ELSE '' END,
		       jsonb_build_object('team', 'team-' || (g % 100), 'env', (ARRAY['prod','staging','dev'])[g % 3 + 1],
		                          'shard', 's' || (g % 1000)) || CASE WHEN g % 7 = 0 THEN '{"odd": ""}' ELSE '{}' END::jsonb,
		       '0 0 1 1 *', 'http://127.0.0.1:9/hook', now() + interval '1 year', g % 11 <> 0
		  FROM generate_series(1, 40000) g`); err != nil {
		t.Fatal(err)
	}
	// Changes after the insert: the copies follow.
	if _, err := db.Pool.Exec(ctx, `UPDATE jobs SET description = 'Renamed ZANZIBAR job', labels = labels || '{"env": "qa"}' WHERE id % 5000 = 1`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `DELETE FROM jobs WHERE id BETWEEN 20001 AND 24000 OR id % 4999 = 0`); err != nil {
		t.Fatal(err)
	}
	one := cronJob("0 0 1 1 *")
	one.Name = "one-off"
	mustCreate(t, db, one)
	one.Description = "Ünïcode ÄRGER"
	one.Labels = map[string]string{"team": "team-7", "example.com/tier": "gold"}
	if _, err := db.UpdateJob(ctx, one.ID, &chronos.JobUpdate{Description: chronos.Some(one.Description), Labels: chronos.Some(one.Labels),
		Name: chronos.Some("Ärger-job")}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `ANALYZE jobs; ANALYZE job_search; ANALYZE job_labels`); err != nil {
		t.Fatal(err)
	}

	yes, no := true, false
	filters := []sql.JobFilter{
		{Q: "team-42"},    // dense (1%)
		{Q: "zanzibar"},   // sparse
		{Q: "qqqqqq"},     // none
		{Q: "team-4"},     // very dense
		{Q: "ärger"},      // lower-cased from Ä
		{Q: "_50%"},       // LIKE's wildcards, literally
		{Q: "batch 3999"}, // one, and a prefix of others
		{NamePrefix: "job-1"},
		{NamePrefix: "Spé_"},
		{NamePrefix: "spé_"},
		{Labels: map[string]string{"env": "prod"}},
		{Labels: map[string]string{"shard": "s42"}},
		{Labels: map[string]string{"team": "team-7", "env": "dev"}},
		{Labels: map[string]string{"env": "qa"}},
		{Labels: map[string]string{"odd": ""}},
		{Labels: map[string]string{"example.com/tier": "gold"}},
		{Labels: map[string]string{"team": "nobody"}},
		{Labels: map[string]string{"team": "team-7", "env": "dev", "shard": "s7"}},
		{NamePrefix: "job-1", Q: "team-1", Labels: map[string]string{"env": "staging"}},
		{NamePrefix: "job-3", Labels: map[string]string{"shard": "s3"}},
		{Q: "team-42", Labels: map[string]string{"shard": "s42"}},
		{Q: "zanzibar", Labels: map[string]string{"env": "prod"}},
		{Q: "team-42", Enabled: &yes},
		{Q: "team-42", Enabled: &no},
		{Labels: map[string]string{"env": "prod"}, Enabled: &no},
		{NamePrefix: "job-2", Q: "batch", Labels: map[string]string{"odd": ""}, Enabled: &yes},
	}
	for _, f := range filters {
		want := oracle(t, db, f)
		if got := walkAll(t, db, f, 500, 0); !slices.Equal(got, want) {
			t.Errorf("%+v, pages of 500: %d jobs, want %d\n got %v\nwant %v", f, len(got), len(want), head(got), head(want))
		}
		for _, limit := range []int{50, 7} {
			got := walkAll(t, db, f, limit, 8)
			if exp := want[:min(len(want), 8*limit)]; !slices.Equal(got, exp) {
				t.Errorf("%+v, pages of %d: %d jobs, want %d\n got %v\nwant %v", f, limit, len(got), len(exp), head(got), head(exp))
			}
		}
		// A first page from anywhere: a cursor in the middle.
		if len(want) > 2 {
			mid := want[len(want)/2]
			f.Limit = 50
			f.Cursor = cursorAfter(mid)
			page, _, err := db.Jobs(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.Index(want, mid) + 1
			exp := want[i:min(i+50, len(want))]
			if got := idsOf(page); !slices.Equal(got, exp) {
				t.Errorf("%+v after %d: %v, want %v", f, mid, head(got), head(exp))
			}
		}
	}
	// A cursor near the largest id: nothing after it, and no overflow.
	for _, f := range filters[:3] {
		f.Cursor = cursorAfter(math.MaxInt64 - 10)
		if page, _, err := db.Jobs(ctx, f); err != nil || len(page) != 0 {
			t.Errorf("%+v: %d jobs, %v", f, len(page), err)
		}
	}
	// Random combinations.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 40 {
		f := sql.JobFilter{}
		if rng.IntN(2) == 0 {
			f.Q = []string{"team-1", "TEAM-9", "batch 12", "zanzi", "settles", "x"}[rng.IntN(6)]
		}
		if rng.IntN(3) == 0 {
			f.NamePrefix = []string{"job-", "job-39", "Spé", "j"}[rng.IntN(4)]
		}
		if rng.IntN(2) == 0 {
			f.Labels = map[string]string{"env": []string{"prod", "dev", "qa"}[rng.IntN(3)]}
			if rng.IntN(2) == 0 {
				f.Labels["team"] = fmt.Sprintf("team-%d", rng.IntN(100))
			}
		}
		if f.Q == "" && f.NamePrefix == "" && len(f.Labels) == 0 {
			continue
		}
		limit := 20 + rng.IntN(480)
		want, got := oracle(t, db, f), walkAll(t, db, f, limit, 6)
		if want = want[:min(len(want), 6*limit)]; !slices.Equal(got, want) {
			t.Errorf("%+v, pages of %d: %d jobs, want %d", f, limit, len(got), len(want))
		}
	}
	// The copies hold exactly what the jobs do.
	var stale int
	if err := db.Pool.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM job_search s FULL JOIN jobs j ON j.id = s.job_id
		         WHERE s.job_id IS NULL OR j.id IS NULL OR s.name <> j.name OR s.lname <> lower(j.name) OR s.ldesc <> lower(j.description))
		     + (SELECT count(*) FROM job_labels l FULL JOIN (SELECT j.id, e.key, e.value FROM jobs j, jsonb_each_text(j.labels) e) x
		         ON x.id = l.job_id AND x.key = l.key AND x.value = l.value WHERE l.job_id IS NULL OR x.id IS NULL)`).Scan(&stale); err != nil || stale != 0 {
		t.Fatalf("%d rows of job_search and job_labels disagree with jobs (%v)", stale, err)
	}
}

func idsOf(jobs []*chronos.Job) []int64 {
	out := []int64{}
	for _, j := range jobs {
		out = append(out, j.ID)
	}
	return out
}

func head(ids []int64) []int64 { return ids[:min(len(ids), 12)] }

// cursorAfter is the cursor of a page that ended with id (its opaque form:
// base64url of "c1:<id>").
func cursorAfter(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("c1:" + strconv.FormatInt(id, 10)))
}
