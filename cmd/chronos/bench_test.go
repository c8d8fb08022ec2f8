package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// TestBenchAllQuick runs `chronos bench all --quick` (smaller still, to
// keep the package's tests short under -race) and checks only that every
// scenario reports sane figures: no timing assertions.
func TestBenchAllQuick(t *testing.T) {
	t.Parallel()
	admin := os.Getenv("TEST_DATABASE_URL")
	if admin == "" {
		admin = defaultAdminDSN
	}
	var stdout, stderr bytes.Buffer
	env := &environ{stdout: &stdout, stderr: &stderr, getenv: func(k string) string {
		if k == "TEST_DATABASE_URL" {
			return admin
		}
		return ""
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	code := runMain(ctx, []string{"bench", "all", "--quick", "--json", "--binary", binary(t),
		"--runs", "1000", "--triggers", "30", "--load-rate", "200", "--jobs", "3", "--duration", "3s",
		"--idle", "3s", "--scale-jobs", "20000"}, env)
	if code != 0 {
		t.Fatalf("bench exited %d\nstdout:\n%s\nstderr:\n%s", code, &stdout, &stderr)
	}

	got := map[string]map[string]float64{}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var r struct {
			Scenario string             `json:"scenario"`
			Metrics  map[string]float64 `json:"metrics"`
			Failed   []string           `json:"failed"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("bench printed a line that is not JSON: %q: %v", line, err)
		}
		if len(r.Failed) > 0 {
			t.Errorf("%s failed: %v", r.Scenario, r.Failed)
		}
		got[r.Scenario] = r.Metrics
	}
	for _, s := range benchOrder {
		if got[s] == nil {
			t.Fatalf("no result for scenario %s in:\n%s", s, &stdout)
		}
	}
	positive := func(s string, names ...string) {
		for _, n := range names {
			if v, ok := got[s][n]; !ok || !(v > 0) {
				t.Errorf("%s.%s = %v (present %v), want > 0", s, n, v, ok)
			}
		}
	}
	ordered := func(s string, names ...string) {
		for i := 1; i < len(names); i++ {
			if got[s][names[i-1]] > got[s][names[i]] {
				t.Errorf("%s: %s %v > %s %v", s, names[i-1], got[s][names[i-1]], names[i], got[s][names[i]])
			}
		}
	}
	equal := func(s, n string, want float64) {
		if v := got[s][n]; v != want {
			t.Errorf("%s.%s = %v, want %v", s, n, v, want)
		}
	}

	positive("throughput", "runs_per_s", "burn_down", "recorded_per_s")
	equal("throughput", "delivered", 1000)
	equal("throughput", "duplicate_deliveries", 0)

	positive("latency", "p50", "p99", "load_p50", "load_p99")
	ordered("latency", "p50", "p90", "p99", "max")
	ordered("latency", "load_p50", "load_p90", "load_p99", "load_max")

	positive("schedule", "lag_p50", "occurrences")
	ordered("schedule", "lag_min", "lag_p50", "lag_p99", "lag_max")
	equal("schedule", "occurrences", 9)
	equal("schedule", "missed", 0)
	equal("schedule", "duplicated", 0)

	// An idle leader still pings and ticks; a child's RSS is its own.
	positive("idle", "db_per_s", "statements_per_s", "rss")
	if rss := got["idle"]["rss"]; rss > 1024 {
		t.Errorf("idle rss = %v MiB: not a plausible process size", rss)
	}

	positive("scale", "small.tick_1000_due", "large.tick_1000_due", "small.page_start", "large.page_end", "insert_jobs_per_s")
}

func TestBenchArgs(t *testing.T) {
	t.Parallel()
	env := &environ{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: func(string) string { return "" }}
	for _, tc := range []struct {
		args []string
		want []string
		bad  bool
	}{
		{args: []string{"all", "--quick"}, want: benchOrder},
		{args: []string{"--quick", "latency", "--json", "idle"}, want: []string{"latency", "idle"}},
		{args: []string{"--runs", "10", "throughput"}, want: []string{"throughput"}},
		{args: []string{"--quick"}, bad: true},
		{args: []string{"nope"}, bad: true},
		{args: []string{"all", "--nope"}, bad: true},
	} {
		fs := newFlagSet(env, "bench", "", "")
		fs.Bool("quick", false, "")
		fs.Bool("json", false, "")
		fs.Int("runs", 0, "")
		names, err := parseBenchArgs(fs, tc.args)
		if tc.bad {
			if err == nil {
				t.Errorf("%v: no error", tc.args)
			}
			continue
		}
		if err != nil || strings.Join(names, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%v: got %v, %v; want %v", tc.args, names, err, tc.want)
		}
	}
}
