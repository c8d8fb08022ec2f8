package sql_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// BenchmarkJobSearch measures a first page (50 jobs) of GET /v1/jobs
// under each search filter at CHRONOS_SEARCH_JOBS jobs (1,000,000 by
// default), with filters that match few jobs and filters that match many,
// and logs each query's plan (EXPLAIN ANALYZE). The report in the README
// comes from:
//
//	go test -run '^$' -bench JobSearch -benchtime 100x ./sql/
func BenchmarkJobSearch(b *testing.B) {
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("CHRONOS_SEARCH_JOBS")); err == nil && v > 0 {
		n = v
	}
	db := sqltest.New(b)
	ctx := b.Context()
	start := time.Now()
	// Names job-<g>; one team of 100 per job, one env of 3, one shard of
	// 10,000 (rare); descriptions mention the team and, for one job in
	// 100,000, a rare word. Triggers are off for the bulk load (a million
	// NOTIFYs are not what is measured), so the load fills the search
	// tables of migration 011 too, as their triggers would.
	sqltest.WithoutTriggers(b, db,
		sqltest.Statement{SQL: `
		INSERT INTO jobs (name, description, labels, cron_expr, target_url, next_run_at)
		SELECT 'job-' || g,
		       'Settles batch ' || g || ' for team-' || (g % 100) || CASE WHEN g % 100000 = 7 THEN ' zanzibar' ELSE '' END,
		       jsonb_build_object('team', 'team-' || (g % 100), 'env', (ARRAY['prod','staging','dev'])[g % 3 + 1],
		                          'shard', 's' || (g % 10000)),
		       '0 0 1 1 *', 'http://127.0.0.1:9/hook', now() + interval '1 year'
		  FROM generate_series(1, $1::int) g`, Args: []any{n}},
		sqltest.Statement{SQL: `
		INSERT INTO job_search (job_id, name, lname, ldesc) SELECT id, name, lower(name), lower(description) FROM jobs ORDER BY id`},
		sqltest.Statement{SQL: `
		INSERT INTO job_labels (key, value, job_id) SELECT l.key, l.value, j.id FROM jobs j, jsonb_each_text(j.labels) l ORDER BY 1, 2, 3`})
	for _, table := range []string{"jobs", "job_search", "job_labels"} {
		if _, err := db.Pool.Exec(ctx, `VACUUM ANALYZE `+table); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("inserted and indexed %d jobs in %v", n, time.Since(start).Round(time.Millisecond))

	cases := []struct {
		name string
		f    sql.JobFilter
	}{
		{"none", sql.JobFilter{}},
		{"name_prefix=many", sql.JobFilter{NamePrefix: "job-1"}},
		{"name_prefix=one", sql.JobFilter{NamePrefix: "job-777777"}},
		{"name_prefix=none", sql.JobFilter{NamePrefix: "zzz"}},
		{"q=many", sql.JobFilter{Q: "team-42"}},
		{"q=rare", sql.JobFilter{Q: "zanzibar"}},
		{"q=none", sql.JobFilter{Q: "qqqqqq"}},
		{"label=many", sql.JobFilter{Labels: map[string]string{"env": "prod"}}},
		{"label=rare", sql.JobFilter{Labels: map[string]string{"shard": "s4242"}}},
		{"label=none", sql.JobFilter{Labels: map[string]string{"team": "nobody"}}},
		{"labels=two", sql.JobFilter{Labels: map[string]string{"team": "team-7", "env": "dev"}}},
		{"all=three", sql.JobFilter{NamePrefix: "job-1", Q: "team-1", Labels: map[string]string{"env": "staging"}}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			c.f.Limit = 50
			jobs, next, err := db.Jobs(ctx, c.f)
			if err != nil {
				b.Fatal(err)
			}
			plan, err := sql.ExplainJobs(ctx, db, c.f)
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("%s: %d jobs, more: %v\n%s", c.name, len(jobs), next != "", strings.Join(plan, "\n"))
			b.ResetTimer()
			for b.Loop() {
				if _, _, err := db.Jobs(ctx, c.f); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/page")
			_ = fmt.Sprint()
		})
	}
}
