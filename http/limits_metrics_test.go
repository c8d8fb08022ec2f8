package http

import (
	"context"
	"strings"
	"testing"
)

// TestLimitMetrics: declared keys only, with their in-flight and waiting
// runs; a key no limit declares exports nothing.
func TestLimitMetrics(t *testing.T) {
	e := parallelEnv(t)
	if body := e.scrape(); strings.Contains(body, "chronos_limit_in_flight{") {
		t.Fatalf("limit gauges with no limit:\n%s", body)
	}
	wantStatus(t, e.do("PUT", "/v1/limits/api", map[string]any{"max_concurrency": 2, "rate": 10, "per_seconds": 3600}), 201) // a bucket that refills no whole token during the test
	body := cronJob("limited")
	body["limit_key"] = "api"
	job := e.createJob(body).ID
	ctx := context.Background()
	if _, err := e.db.Pool.Exec(ctx, `
		INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at)
		SELECT $1, now(), 'manual', now() - interval '1 second' FROM generate_series(1, 5)`, job); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Claim(ctx, "w", 5, 60e9); err != nil {
		t.Fatal(err)
	}
	e.wantScraped(
		`chronos_limit_in_flight{key="api"} 2`,
		`chronos_limit_waiting{key="api"} 3`,
		`chronos_limit_tokens{key="api"} 8`,
	)
}
