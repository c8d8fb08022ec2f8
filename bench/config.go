package bench

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"
)

// DefaultServerURL is the server the bench creates its throwaway
// databases on when neither Config.DatabaseURL nor Config.ServerURL is set.
const DefaultServerURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// Sizes are the sizes and durations of the scenarios. A zero field stands
// for the default of the mode: FullSizes, or QuickSizes with Config.Quick.
type Sizes struct {
	Runs      int           // throughput: runs due at once
	Triggers  int           // latency: triggers per phase
	Rate      int           // latency: triggers per second under load
	LoadRate  int           // latency: background runs per second
	Jobs      int           // schedule: jobs firing every second
	Duration  time.Duration // schedule: how long to watch them
	Idle      time.Duration // idle: how long to watch the idle instance
	ScaleJobs int           // scale: jobs defined

	BurstJobs         int           // burst: one-shot jobs due at one instant
	HerdJobs          int           // herd: cron jobs whose next occurrence is one instant
	Clients           int           // burst, create: concurrent API clients
	CreateJobs        int           // create: jobs to create
	CreateDuration    time.Duration // create: stop after this long even if jobs remain (0: no limit)
	SustainedRate     int           // sustained: offered runs per second
	SustainedDuration time.Duration // sustained: how long to offer them
	Retention         time.Duration // sustained: the instances' RUN_RETENTION
	LimitRuns         int           // limits: runs due at once per burst
	HostJobs          int           // hosts: jobs over ten local hosts, triggered once per phase
}

// FullSizes are the sizes a zero Sizes field stands for.
var FullSizes = Sizes{
	Runs: 50_000, Triggers: 500, Rate: 100, LoadRate: 1_000, Jobs: 20, Duration: 60 * time.Second,
	Idle: 60 * time.Second, ScaleJobs: 1_000_000,
	BurstJobs: 20_000, HerdJobs: 100_000, Clients: 16, CreateJobs: 20_000,
	SustainedRate: 3_000, SustainedDuration: 20 * time.Minute, Retention: 2 * time.Minute,
	LimitRuns: 10_000,
	HostJobs:  1_000,
}

// QuickSizes are the sizes a zero Sizes field stands for with --quick:
// every scenario small, `bench all --quick` well under 3 minutes on 2
// cores.
var QuickSizes = Sizes{
	Runs: 5_000, Triggers: 100, Rate: 50, LoadRate: 200, Jobs: 5, Duration: 5 * time.Second,
	Idle: 10 * time.Second, ScaleJobs: 100_000,
	BurstJobs: 2_000, HerdJobs: 10_000, Clients: 16, CreateJobs: 2_000,
	SustainedRate: 500, SustainedDuration: 30 * time.Second, Retention: 2 * time.Minute,
	LimitRuns: 2_000,
	HostJobs:  300,
}

// Config is what `chronos bench` was asked to do: its flags, plus what
// the command wires in (where to write, the databases, the binary).
// Repeat, Instances and Concurrency must be at least 1; see Validate.
type Config struct {
	Sizes

	Quick       bool   // zero sizes mean QuickSizes instead of FullSizes
	JSON        bool   // one JSON object per scenario run instead of tables
	Repeat      int    // runs of each scenario; more than one adds the medians
	CPUProfile  string // file for a CPU profile of the bench process ("": none)
	Instances   int    // chronos instances per scenario
	Procs       bool   // instances as child processes instead of in-process
	Concurrency int    // WORKER_CONCURRENCY of each instance
	LogLevel    string // log level of the instances: debug, info, warn, error
	Statements  bool   // throughput, latency: count the instances' statements through a proxy
	AsyncCommit bool   // reactors on a synchronous_commit=off pool, as serve's REACTOR_SYNCHRONOUS_COMMIT=off (the default)
	Peer        string // burst: "" or PeerRiver, the side-by-side peer run on the same server in the same run
	PeerDir     string // the peer's module (default: bench/peer/river above the working directory or the executable)
	// TargetDelay is how long the bench's target takes to answer each
	// request (0: at once). A real webhook's handler takes milliseconds
	// to seconds, and a delivery still in flight after 20 ms is marked
	// running: with a delay the scenarios measure that path too.
	TargetDelay time.Duration

	// Binary is the chronos executable child processes run (`serve`);
	// the command passes os.Executable. A go test binary cannot serve.
	Binary string
	// ServeEnv names the environment variables `chronos serve` reads: a
	// child gets the bench's settings, not the caller's.
	ServeEnv []string

	// DatabaseURL, when set, is used as it is (migrated; the bench's jobs,
	// named bench-*, are deleted after each scenario). Otherwise each
	// scenario gets a throwaway database on the server of ServerURL
	// (DefaultServerURL when empty), dropped afterwards.
	DatabaseURL string
	ServerURL   string

	Stdout io.Writer    // tables or JSON
	Stderr io.Writer    // progress lines
	Log    *slog.Logger // the in-process instances' logger (nil: discard)
}

// Validate refuses values no scenario can run with, naming the flag: a
// negative size, rate, count or duration; a repeat, instance or
// concurrency count below 1; a sub-second duration where whole seconds
// count. Zero sizes are valid: they stand for the defaults.
func (c Config) Validate() error {
	var errs []error
	atLeast1 := func(flag string, v int) {
		if v < 1 {
			errs = append(errs, fmt.Errorf("--%s %d: must be at least 1", flag, v))
		}
	}
	size := func(flag string, v int) {
		if v < 0 {
			errs = append(errs, fmt.Errorf("--%s %d: must not be negative (0 means the default)", flag, v))
		}
	}
	if c.Peer != "" && c.Peer != PeerRiver {
		errs = append(errs, fmt.Errorf("--peer %q: the only peer is %q", c.Peer, PeerRiver))
	}
	dur := func(flag string, v, least time.Duration) {
		switch {
		case v < 0:
			errs = append(errs, fmt.Errorf("--%s %s: must not be negative (0 means the default)", flag, v))
		case v > 0 && v < least:
			errs = append(errs, fmt.Errorf("--%s %s: must be at least %s (0 means the default)", flag, v, least))
		}
	}
	atLeast1("repeat", c.Repeat)
	atLeast1("instances", c.Instances)
	atLeast1("concurrency", c.Concurrency)
	size("runs", c.Runs)
	size("triggers", c.Triggers)
	size("rate", c.Rate)
	if c.Rate > maxTriggerRate {
		errs = append(errs, fmt.Errorf("--rate %d: at most %d triggers per second", c.Rate, maxTriggerRate))
	}
	size("load-rate", c.LoadRate)
	size("jobs", c.Jobs)
	dur("duration", c.Duration, time.Second)
	dur("idle", c.Idle, time.Second)
	size("scale-jobs", c.ScaleJobs)
	size("burst-jobs", c.BurstJobs)
	size("herd-jobs", c.HerdJobs)
	size("clients", c.Clients)
	size("create-jobs", c.CreateJobs)
	if c.TargetDelay < 0 {
		errs = append(errs, fmt.Errorf("--target-delay %s: must not be negative (0 answers at once)", c.TargetDelay))
	}
	if c.CreateDuration < 0 {
		errs = append(errs, fmt.Errorf("--create-duration %s: must not be negative (0 means no limit)", c.CreateDuration))
	}
	size("sustained-rate", c.SustainedRate)
	dur("sustained-duration", c.SustainedDuration, time.Second)
	dur("retention", c.Retention, time.Second)
	size("limit-runs", c.LimitRuns)
	size("host-jobs", c.HostJobs)
	return errors.Join(errs...)
}

// maxTriggerRate bounds latency's --rate: one ticker tick per trigger.
const maxTriggerRate = 100_000

// withDefaults fills the zero sizes from FullSizes or QuickSizes.
func (c Config) withDefaults() Config {
	d := FullSizes
	if c.Quick {
		d = QuickSizes
	}
	pick := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	pickD := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	pick(&c.Runs, d.Runs)
	pick(&c.Triggers, d.Triggers)
	pick(&c.Rate, d.Rate)
	pick(&c.LoadRate, d.LoadRate)
	pick(&c.Jobs, d.Jobs)
	pickD(&c.Duration, d.Duration)
	pickD(&c.Idle, d.Idle)
	pick(&c.ScaleJobs, d.ScaleJobs)
	pick(&c.BurstJobs, d.BurstJobs)
	pick(&c.HerdJobs, d.HerdJobs)
	pick(&c.Clients, d.Clients)
	pick(&c.CreateJobs, d.CreateJobs)
	pick(&c.SustainedRate, d.SustainedRate)
	pickD(&c.SustainedDuration, d.SustainedDuration)
	pickD(&c.Retention, d.Retention)
	pick(&c.LimitRuns, d.LimitRuns)
	pick(&c.HostJobs, d.HostJobs)
	if c.ServerURL == "" {
		c.ServerURL = DefaultServerURL
	}
	if c.LogLevel == "" {
		c.LogLevel = "error"
	}
	if c.Stdout == nil {
		c.Stdout = io.Discard
	}
	if c.Stderr == nil {
		c.Stderr = io.Discard
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return c
}
