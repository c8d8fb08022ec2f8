package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chronoshq/chronos/sql/sqltest"
)

// tinySizes keep every scenario short under -race: the tests check that
// each completes and counts correctly, never how fast.
var tinySizes = Sizes{
	Runs: 1000, Triggers: 30, LoadRate: 200, Jobs: 3, Duration: 3 * time.Second, Idle: 3 * time.Second,
	ScaleJobs: 20_000, BurstJobs: 200, HerdJobs: 500, Clients: 8, CreateJobs: 200,
	SustainedRate: 100, SustainedDuration: 5 * time.Second, HostJobs: 100,
	LimitRuns: 200, // seven bursts: three limited between four unlimited
}

// testSizes are tinySizes, but for the scale scenario's jobs: 5,000 in a
// plain run (every figure is still measured on 1,000 jobs and then on
// five times as many), the 20,000 of tinySizes where the long tests run
// (CHRONOS_LONG_TESTS, which .ci/run sets): creating them was most of the
// package's time.
func testSizes() Sizes {
	s := tinySizes
	if os.Getenv("CHRONOS_LONG_TESTS") == "" {
		s.ScaleJobs = 5_000
	}
	return s
}

// scenarioResult is the JSON a scenario run prints.
type scenarioResult struct {
	Scenario string              `json:"scenario"`
	Params   map[string]any      `json:"params"`
	Metrics  map[string]*float64 `json:"metrics"`
	Tables   map[string]struct {
		Columns []string     `json:"columns"`
		Rows    [][]*float64 `json:"rows"`
	} `json:"tables"`
	Failed []string `json:"failed"`
}

// throwawayScenario is the scenario that makes its own throwaway database
// on the server, as `chronos bench` does by default (created, migrated,
// dropped); the others run on a database cloned from the tests' migrated
// template (sqltest), which saves each of them applying every migration.
const throwawayScenario = "idle"

// runScenario runs one scenario at tiny sizes (adjusted by tweak) and
// returns its JSON result.
func runScenario(t *testing.T, name string, tweak func(*Config)) scenarioResult {
	t.Helper()
	server := os.Getenv("TEST_DATABASE_URL")
	if server == "" {
		server = DefaultServerURL
	}
	var stdout, stderr bytes.Buffer
	cfg := Config{Sizes: testSizes(), Quick: true, JSON: true, Repeat: 1, Instances: 1, Concurrency: 32,
		ServerURL: server, Stdout: &stdout, Stderr: &stderr}
	if name != throwawayScenario {
		cfg.DatabaseURL = sqltest.NewURL(t)
	}
	if tweak != nil {
		tweak(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	if err := Run(ctx, cfg, []string{name}); err != nil {
		t.Fatalf("bench %s: %v\nstdout:\n%s\nstderr:\n%s", name, err, &stdout, &stderr)
	}
	t.Logf("bench %s:\n%s%s", name, &stderr, &stdout)
	var r scenarioResult
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &r); err != nil {
		t.Fatalf("bench %s printed what is not one JSON object: %q: %v", name, &stdout, err)
	}
	if r.Scenario != name {
		t.Fatalf("scenario = %q, want %q", r.Scenario, name)
	}
	if len(r.Failed) > 0 {
		t.Errorf("%s failed: %v", name, r.Failed)
	}
	if ref, ok := r.Params["cpu_ref_us"].(float64); !ok || !(ref > 0) {
		t.Errorf("%s: params %v lack the machine's CPU reference (cpu_ref_us)", name, r.Params)
	}
	return r
}

// figures are a result's metrics, with helpers that check them.
type figures struct {
	t    *testing.T
	name string
	m    map[string]*float64
}

func (f figures) get(n string) float64 {
	f.t.Helper()
	v, ok := f.m[n]
	if !ok {
		f.t.Fatalf("%s: no metric %s in %v", f.name, n, f.m)
	}
	if v == nil {
		f.t.Fatalf("%s.%s is null (n/a)", f.name, n)
	}
	return *v
}

func (f figures) positive(names ...string) {
	f.t.Helper()
	for _, n := range names {
		if v := f.get(n); !(v > 0) {
			f.t.Errorf("%s.%s = %v, want > 0", f.name, n, v)
		}
	}
}

func (f figures) ordered(names ...string) {
	f.t.Helper()
	for i := 1; i < len(names); i++ {
		if a, b := f.get(names[i-1]), f.get(names[i]); a > b {
			f.t.Errorf("%s: %s %v > %s %v", f.name, names[i-1], a, names[i], b)
		}
	}
}

func (f figures) equal(n string, want float64) {
	f.t.Helper()
	if v := f.get(n); v != want {
		f.t.Errorf("%s.%s = %v, want %v", f.name, n, v, want)
	}
}

// present says the metric exists; it may be null (n/a: Postgres on
// another machine).
func (f figures) present(names ...string) {
	f.t.Helper()
	for _, n := range names {
		if _, ok := f.m[n]; !ok {
			f.t.Errorf("%s: no metric %s", f.name, n)
		}
	}
}

// TestScenarios runs every scenario once, tiny, each in a database of its
// own and in parallel, and checks that it reports sane figures and counts
// correctly: every run delivered, no occurrence missed or doubled. No
// timing assertions.
func TestScenarios(t *testing.T) {
	t.Parallel()
	checks := map[string]struct {
		tweak func(*Config)
		check func(f figures)
	}{
		"throughput": {check: func(f figures) {
			f.positive("runs_per_s", "burn_down", "recorded_per_s", "chronos_cpu_per_run")
			f.present("postgres_cpu_per_run")
			f.equal("delivered", 1000)
			f.equal("duplicate_deliveries", 0)
		}},
		"latency": {check: func(f figures) {
			f.positive("p50", "p99", "load_p50", "load_p99")
			f.ordered("p50", "p90", "p99", "max")
			f.ordered("load_p50", "load_p90", "load_p99", "load_max")
		}},
		"schedule": {check: func(f figures) {
			f.positive("lag_p50", "occurrences")
			f.ordered("lag_min", "lag_p50", "lag_p99", "lag_max")
			f.equal("occurrences", 9)
			f.equal("missed", 0)
			f.equal("duplicated", 0)
		}},
		"idle": {
			// A child process, so its RSS is its own.
			tweak: func(c *Config) { c.Binary = binary(t) },
			check: func(f figures) {
				// An idle leader still pings and ticks.
				f.positive("db_per_s", "statements_per_s", "rss")
				if rss := f.get("rss"); rss > 1024 {
					t.Errorf("idle rss = %v MiB: not a plausible process size", rss)
				}
			},
		},
		"scale": {check: func(f figures) {
			f.positive("small.tick_1000_due", "large.tick_1000_due", "small.page_start", "large.page_end", "create_jobs_per_s", "jobs_bytes_per_job")
		}},
		"burst": {check: func(f figures) {
			f.positive("runs_per_s", "last_delivery", "chronos_cpu_per_run")
			f.present("postgres_cpu_per_run")
			f.ordered("first_delivery", "last_delivery", "all_recorded")
			if v := f.get("first_delivery"); v < 0 {
				t.Errorf("burst: first delivery %v ms before the instant", v)
			}
			f.equal("delivered", 200)
			f.equal("duplicate_deliveries", 0)
		}},
		"herd": {check: func(f figures) {
			f.ordered("first_delivery", "delivery_p50", "delivery_p99", "last_delivery")
			f.equal("occurrences", 500)
			f.equal("missed", 0)
			f.equal("doubled", 0)
		}},
		"create": {
			// Child processes: their CPU is read from /proc, the bench's apart.
			tweak: func(c *Config) { c.Binary, c.Procs = binary(t), true },
			check: func(f figures) {
				f.positive("jobs_per_s", "post_p50", "chronos_cpu_per_job", "bench_cpu_per_job", "batch.jobs_per_s")
				f.equal("batch.created", 1000)
				f.present("postgres_cpu_per_job")
				f.ordered("post_p50", "post_p90", "post_p99", "post_max")
				f.equal("created", 200)
			},
		},
		"limits": {check: func(f figures) {
			f.positive("unlimited_runs_per_s", "limited_runs_per_s", "unlimited_3_runs_per_s", "limited_vs_unlimited")
			f.equal("duplicate_deliveries", 0)
			f.equal("runs_started_over_limit", 0)
		}},
		"limit-rate": {
			// Two `chronos serve` child processes share the key.
			tweak: func(c *Config) { c.Binary = binary(t) },
			check: func(f figures) {
				f.equal("duplicate_deliveries", 0)
				if f.get("first_second")+f.get("delivered_in_window") <= 0 {
					t.Errorf("limit-rate: no run delivered")
				}
				// At most the rate, plus a bucket's burst, over the window
				// (tinySizes' 3 s): a bound on the limit, not on speed.
				if got, most := f.get("delivered_in_window"), float64(limitRatePerSecond*(3+1)); got > most {
					t.Errorf("limit-rate: %v runs delivered in 3 s at %d/s, more than %v", got, limitRatePerSecond, most)
				}
			},
		},
		"hosts": {check: func(f figures) {
			f.positive("good_p99_ok", "good_p99_429", "good_p99_hang", "good_p99_ratio_429", "good_p99_ratio_hang")
			f.ordered("good_p50_ok", "good_p99_ok")
		}},
		"sustained": {check: func(f figures) {
			f.positive("offered_per_s", "delivered_per_s", "lag_p99", "job_runs_mib", "cron_deliveries", "cron_lag_p99")
			f.equal("duplicate_deliveries", 0)
			if in, d := f.get("inserted"), f.get("delivered"); in < 400 || d != in {
				t.Errorf("sustained: %v runs inserted, %v delivered; want about 500, all delivered", in, d)
			}
			if f.m["size_change"] != nil {
				t.Errorf("sustained: size_change = %v, want n/a in a run shorter than the retention", *f.m["size_change"])
			}
		}},
	}
	for _, name := range Names() {
		c, ok := checks[name]
		if !ok {
			t.Errorf("scenario %s has no test", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := runScenario(t, name, c.tweak)
			c.check(figures{t: t, name: name, m: r.Metrics})
			if name == "sustained" {
				w := r.Tables["per window"]
				if len(w.Rows) != 1 || len(w.Columns) != len(w.Rows[0]) {
					t.Errorf("sustained: per-window table %+v, want one 5 s window", w)
				}
			}
		})
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want []string
		bad  string
	}{
		{args: []string{"all"}, want: Names()},
		{args: []string{"latency", "idle"}, want: []string{"latency", "idle"}},
		{args: []string{"burst", "all"}, want: append([]string{"burst"}, Names()...)},
		{args: nil, bad: "name a scenario"},
		{args: []string{"nope"}, bad: `unknown scenario "nope"`},
		{args: []string{"burst", "bogus"}, bad: `unknown scenario "bogus"`},
	} {
		got, err := Resolve(tc.args)
		if tc.bad != "" {
			if err == nil || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("%v: error %v, want one saying %q", tc.args, err, tc.bad)
			}
			continue
		}
		if err != nil || strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%v: got %v, %v; want %v", tc.args, got, err, tc.want)
		}
	}
	for _, n := range []string{"throughput", "latency", "schedule", "idle", "scale", "burst", "herd", "create", "sustained"} {
		if _, ok := lookup(n); !ok {
			t.Errorf("scenario %s is missing", n)
		}
	}
}
