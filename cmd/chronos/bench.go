package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/chronoshq/chronos/bench"
)

func init() {
	register(&command{
		name:    "bench",
		summary: "measure throughput, latency, schedule precision, idle cost, scale, bursts, herds, creation and sustained load (scenarios: " + strings.Join(bench.Names(), ", ") + ", all)",
		run:     runBench,
	})
}

const benchHelp = `Measures a Chronos cluster end to end against a real Postgres, with its own
local webhook target (it answers 204 and records when each request arrived)
and its own chronos instances: in-process by default (the same wiring as
serve), or child processes running ` + "`chronos serve`" + ` with --procs.

Database: DATABASE_URL when set (migrated; the bench's jobs, named bench-*,
are deleted after each scenario); otherwise a throwaway database per scenario,
created on the server of TEST_DATABASE_URL (default
` + bench.DefaultServerURL + `) and dropped after.

Scenarios:
  throughput  --runs runs due at once (inserted ahead with one INSERT): burn-down
              time, runs/s, CPU per run of chronos and of Postgres
  latency     POST /v1/jobs/{id}/trigger -> target receives it: p50/p90/p99/max
              over --triggers triggers one at a time, then at --rate per second
              while --load-rate background runs/s are inserted
  schedule    --jobs jobs on "*/1 * * * * *" for --duration: lag of each delivery
              behind its scheduled instant; missed and duplicated occurrences
              (both must be 0, or bench fails)
  idle        one idle instance (a child process when the binary is available)
              for --idle: database queries/s it causes and its RSS
  scale       --scale-jobs jobs defined: materializer tick with 1,000 due and
              GET /v1/jobs?limit=100 at the start, middle and end, next to the
              same on 1,000 jobs
  burst       --burst-jobs one-shot jobs created through the API by --clients
              clients, all due at one instant T a little after the creation
              ends: T -> first and last delivery, runs/s, CPU per run
  herd        --herd-jobs cron jobs (bulk-inserted) whose next occurrence is one
              instant T: first, last, p50, p99 delivery after T; missed and
              doubled occurrences (both must be 0, or bench fails)
  create      --clients API clients (keep-alive) creating --create-jobs jobs:
              jobs/s, p50/p99 of POST /v1/jobs, CPU per job
  sustained   --sustained-rate runs/s for --sustained-duration, offered by
              inserting pending runs of a few jobs every 10 ms (the claim,
              delivery and completion path of any run), with RUN_RETENTION
              --retention: per window (a minute; 5 s with --quick) runs/s
              delivered, lag p99 and the sizes of job_runs, run_attempts and
              their indexes; whether they are flat once retention is reached
  limits      --limit-runs runs due at once over 100 jobs, seven bursts on the
              same instances, by turns with no limit and with each job's own
              key limited to 10 in flight (three limited, each between two
              unlimited); the median of each limited burst's runs/s over its
              neighbours' mean (goal >= 90%), every run once, no key ever
              over its limit
  limit-rate  a key limited to 50 runs/s, two instances (child processes), runs
              enough to saturate it: runs/s at the target over --duration
              (mean, min, max a second) and the total's deviation from
              50 x seconds (goal within 5%)
  hosts       --host-jobs jobs over ten local hosts (ports), each triggered once
              per phase: the nine good hosts' trigger -> delivery p50/p99 with
              the tenth healthy, answering 429 Retry-After: 5, and hanging;
              the ratios to the healthy phase (goal: at most 1.10)
  all         every scenario in this order

--quick makes every scenario small (all of them finish in well under 3 minutes
on 2 cores); explicit size flags still win. A size, rate or duration flag of 0
means its default (full or quick). --repeat N runs each scenario N times and
adds the median of every figure. --json prints one JSON object per scenario run
(and per median) instead of tables.

Examples:
  chronos bench all --quick
  chronos bench throughput --runs 100000 --instances 2 --concurrency 64
  chronos bench burst herd create --repeat 3
  chronos bench latency schedule --repeat 3 --json
  chronos bench throughput --cpuprofile cpu.out && go tool pprof -top cpu.out`

// sizeHelp is a size flag's help: what it is and its defaults.
func sizeHelp(what string, full, quick any) string {
	return fmt.Sprintf("%s (0: the default, %v; quick %v)", what, full, quick)
}

// parseBenchArgs splits scenario names from flags, which may come in any
// order (`bench all --quick` and `bench --quick all`), and resolves the
// names (all, unknown ones refused).
func parseBenchArgs(fs *flagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var names []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(fs.stdout)
			fs.Usage()
			return nil, err
		}
		if err != nil {
			return nil, usagef("bench: %v (see `chronos bench --help`)", err)
		}
		if fs.NArg() == 0 {
			break
		}
		names = append(names, fs.Arg(0))
		args = fs.Args()[1:]
	}
	resolved, err := bench.Resolve(names)
	if err != nil {
		return nil, usagef("bench: %v (see `chronos bench --help`)", err)
	}
	return resolved, nil
}

// benchFlags registers the flags of `chronos bench` on fs, into c.
func benchFlags(fs *flagSet, c *bench.Config) {
	full, quick := bench.FullSizes, bench.QuickSizes
	fs.BoolVar(&c.Quick, "quick", false, "small sizes for every scenario (bench all --quick takes well under 3 minutes)")
	fs.BoolVar(&c.JSON, "json", false, "print one JSON object per scenario run instead of tables")
	fs.IntVar(&c.Repeat, "repeat", 1, "run each scenario this many times and add the median of each figure")
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "write a CPU profile of the bench process (in-process instances included) to this file")
	fs.IntVar(&c.Instances, "instances", 1, "chronos instances to start")
	fs.BoolVar(&c.Procs, "procs", false, "start the instances as child processes (`chronos serve`) instead of in-process")
	fs.StringVar(&c.Binary, "binary", "", "the chronos binary for child processes (default: this executable)")
	fs.IntVar(&c.Concurrency, "concurrency", 32, "WORKER_CONCURRENCY of each instance")
	fs.BoolVar(&c.Statements, "statements", false, "throughput, latency: route the instances through a counting proxy and break their statements down")
	fs.BoolVar(&c.AsyncCommit, "async-commit", true, "the reactors get a pool of their own with synchronous_commit=off, as serve's default REACTOR_SYNCHRONOUS_COMMIT=off (the API's stays synchronous); --async-commit=false puts them on the API's pool")
	fs.DurationVar(&c.TargetDelay, "target-delay", 0, "how long the bench's target takes to answer each request (0: at once), as a real webhook's handler would")
	fs.StringVar(&c.LogLevel, "log-level", "error", "log level of the instances (debug, info, warn, error)")
	fs.IntVar(&c.Runs, "runs", 0, sizeHelp("throughput: runs due at once", full.Runs, quick.Runs))
	fs.IntVar(&c.Triggers, "triggers", 0, sizeHelp("latency: triggers per phase", full.Triggers, quick.Triggers))
	fs.IntVar(&c.Rate, "rate", 0, sizeHelp("latency: triggers per second in the under-load phase", full.Rate, quick.Rate))
	fs.IntVar(&c.LoadRate, "load-rate", 0, sizeHelp("latency: background runs per second in the under-load phase", full.LoadRate, quick.LoadRate))
	fs.IntVar(&c.Jobs, "jobs", 0, sizeHelp("schedule: jobs firing every second; scale: jobs defined, unless --scale-jobs is given", full.Jobs, quick.Jobs))
	fs.StringVar(&c.Peer, "peer", "", "burst: also run this peer's burn-down of as many jobs on the same server in the same run, and print the ratio (river)")
	fs.StringVar(&c.PeerDir, "peer-dir", "", "the peer's Go module (default: bench/peer/river above the working directory or this executable)")
	fs.DurationVar(&c.Duration, "duration", 0, sizeHelp("schedule: how long to watch them; limit-rate: the window measured", full.Duration, quick.Duration))
	fs.DurationVar(&c.Idle, "idle", 0, sizeHelp("idle: how long to watch the idle instance", full.Idle, quick.Idle))
	fs.IntVar(&c.ScaleJobs, "scale-jobs", 0, sizeHelp("scale: jobs defined", full.ScaleJobs, quick.ScaleJobs))
	fs.IntVar(&c.BurstJobs, "burst-jobs", 0, sizeHelp("burst: one-shot jobs due at one instant", full.BurstJobs, quick.BurstJobs))
	fs.IntVar(&c.HerdJobs, "herd-jobs", 0, sizeHelp("herd: cron jobs whose next occurrence is one instant", full.HerdJobs, quick.HerdJobs))
	fs.IntVar(&c.Clients, "clients", 0, sizeHelp("burst, create: concurrent API clients", full.Clients, quick.Clients))
	fs.IntVar(&c.CreateJobs, "create-jobs", 0, sizeHelp("create: jobs to create", full.CreateJobs, quick.CreateJobs))
	fs.DurationVar(&c.CreateDuration, "create-duration", 0, "create: stop after this long even if jobs remain (0: no limit, --create-jobs decides)")
	fs.IntVar(&c.SustainedRate, "sustained-rate", 0, sizeHelp("sustained: runs per second offered", full.SustainedRate, quick.SustainedRate))
	fs.DurationVar(&c.SustainedDuration, "sustained-duration", 0, sizeHelp("sustained: how long to offer them", full.SustainedDuration, quick.SustainedDuration))
	fs.DurationVar(&c.Retention, "retention", 0, sizeHelp("sustained: RUN_RETENTION of the instances", full.Retention, quick.Retention))
	fs.IntVar(&c.LimitRuns, "limit-runs", 0, sizeHelp("limits: runs due at once per burst", full.LimitRuns, quick.LimitRuns))
	fs.IntVar(&c.HostJobs, "host-jobs", 0, sizeHelp("hosts: jobs over ten local hosts", full.HostJobs, quick.HostJobs))
}

func runBench(ctx context.Context, args []string, env *environ) error {
	fs := newFlagSet(env, "bench", "<scenario>... [flags]", benchHelp)
	var cfg bench.Config
	benchFlags(fs, &cfg)
	names, err := parseBenchArgs(fs, args)
	if err != nil {
		return err
	}
	if cfg.ScaleJobs == 0 && cfg.Jobs > 0 && slices.Contains(names, "scale") {
		cfg.ScaleJobs = cfg.Jobs // `bench scale --jobs N`
	}
	if err := cfg.Validate(); err != nil {
		return usagef("bench: %v (see `chronos bench --help`)", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		return usagef("bench: invalid --log-level %q: must be debug, info, warn or error", cfg.LogLevel)
	}
	if cfg.Binary == "" {
		// Child processes (--procs, idle) run this very binary's serve.
		cfg.Binary, _ = os.Executable()
	}
	for _, v := range serveVars {
		cfg.ServeEnv = append(cfg.ServeEnv, v.name)
	}
	cfg.DatabaseURL = env.getenv("DATABASE_URL")
	cfg.ServerURL = env.getenv("TEST_DATABASE_URL")
	cfg.Stdout, cfg.Stderr = env.stdout, env.stderr
	cfg.Log = newLogger(env.stderr, level, "text")
	if err := bench.Run(ctx, cfg, names); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}
