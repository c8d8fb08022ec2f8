package bench

import (
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	ok := Config{Repeat: 1, Instances: 1, Concurrency: 32}
	if err := ok.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(c *Config)
		want string
	}{
		{"runs", func(c *Config) { c.Runs = -5 }, "--runs -5: must not be negative (0 means the default)"},
		{"triggers", func(c *Config) { c.Triggers = -1 }, "--triggers -1"},
		{"rate", func(c *Config) { c.Rate = -1 }, "--rate -1"},
		{"rate too high", func(c *Config) { c.Rate = 1_000_000_001 }, "--rate 1000000001: at most"},
		{"load-rate", func(c *Config) { c.LoadRate = -1 }, "--load-rate -1"},
		{"jobs", func(c *Config) { c.Jobs = -1 }, "--jobs -1"},
		{"duration", func(c *Config) { c.Duration = -time.Second }, "--duration -1s"},
		{"duration sub-second", func(c *Config) { c.Duration = 500 * time.Millisecond }, "--duration 500ms: must be at least 1s"},
		{"idle", func(c *Config) { c.Idle = -time.Second }, "--idle -1s"},
		{"scale-jobs", func(c *Config) { c.ScaleJobs = -1 }, "--scale-jobs -1"},
		{"burst-jobs", func(c *Config) { c.BurstJobs = -1 }, "--burst-jobs -1"},
		{"herd-jobs", func(c *Config) { c.HerdJobs = -1 }, "--herd-jobs -1"},
		{"clients", func(c *Config) { c.Clients = -1 }, "--clients -1"},
		{"create-jobs", func(c *Config) { c.CreateJobs = -1 }, "--create-jobs -1"},
		{"create-duration", func(c *Config) { c.CreateDuration = -time.Second }, "--create-duration -1s"},
		{"sustained-rate", func(c *Config) { c.SustainedRate = -1 }, "--sustained-rate -1"},
		{"sustained-duration", func(c *Config) { c.SustainedDuration = -time.Minute }, "--sustained-duration -1m0s"},
		{"retention", func(c *Config) { c.Retention = -time.Minute }, "--retention -1m0s"},
		{"repeat", func(c *Config) { c.Repeat = 0 }, "--repeat 0: must be at least 1"},
		{"instances", func(c *Config) { c.Instances = -2 }, "--instances -2: must be at least 1"},
		{"concurrency", func(c *Config) { c.Concurrency = 0 }, "--concurrency 0: must be at least 1"},
	} {
		c := ok
		tc.edit(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
	// Every problem is named at once.
	c := ok
	c.Runs, c.HerdJobs = -1, -1
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--runs") || !strings.Contains(err.Error(), "--herd-jobs") {
		t.Errorf("two bad flags: %v", err)
	}
}

func TestWithDefaults(t *testing.T) {
	t.Parallel()
	full := Config{}.withDefaults()
	if full.Sizes != FullSizes {
		t.Errorf("full sizes %+v, want %+v", full.Sizes, FullSizes)
	}
	quick := Config{Quick: true}.withDefaults()
	if quick.Sizes != QuickSizes {
		t.Errorf("quick sizes %+v, want %+v", quick.Sizes, QuickSizes)
	}
	given := Config{Quick: true, Sizes: Sizes{Runs: 7, HerdJobs: 9}}.withDefaults()
	if given.Runs != 7 || given.HerdJobs != 9 || given.BurstJobs != QuickSizes.BurstJobs {
		t.Errorf("explicit sizes lost: %+v", given.Sizes)
	}
	if full.ServerURL != DefaultServerURL || full.Log == nil || full.Stdout == nil {
		t.Errorf("wiring defaults missing: %+v", full)
	}
	// Quick mode stays small: `bench all --quick` well under 3 minutes.
	if q := QuickSizes; q.SustainedDuration > 30*time.Second || q.HerdJobs > 10_000 || q.BurstJobs > 2_000 || q.CreateJobs > 2_000 {
		t.Errorf("quick sizes grew: %+v", q)
	}
}
