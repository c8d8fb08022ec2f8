package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"
)

func init() {
	register(&command{
		name:    "bench",
		summary: "measure throughput, latency, schedule precision, idle cost and scale (scenarios: " + strings.Join(benchOrder, ", ") + ", all)",
		run:     runBench,
	})
}

// benchOrder is the order `bench all` runs the scenarios in.
var benchOrder = []string{"throughput", "latency", "schedule", "idle", "scale"}

// benchScenarios maps a scenario name to the function that runs it once.
var benchScenarios = map[string]func(ctx context.Context, b *bencher) (*benchResult, error){
	"throughput": benchThroughput,
	"latency":    benchLatency,
	"schedule":   benchSchedule,
	"idle":       benchIdle,
	"scale":      benchScale,
}

const benchHelp = `Measures a Chronos cluster end to end against a real Postgres, with its own
local webhook target (it answers 204 and records when each request arrived)
and its own chronos instances: in-process by default (the same wiring as
serve), or child processes running ` + "`chronos serve`" + ` with --procs.

Database: DATABASE_URL when set (migrated; the bench's jobs, named bench-*,
are deleted after each scenario); otherwise a throwaway database per scenario,
created on the server of TEST_DATABASE_URL (default
postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable) and dropped after.

Scenarios:
  throughput  --runs runs due at once; burn-down time and runs/s
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
  all         every scenario in this order

--quick makes every scenario small (all of them finish in well under 2 minutes
on 2 cores); explicit size flags still win. --repeat N runs each scenario N
times and adds the median of every figure. --json prints one JSON object per
scenario run (and per median) instead of tables.

Examples:
  chronos bench all --quick
  chronos bench throughput --runs 100000 --instances 2 --concurrency 64
  chronos bench latency schedule --repeat 3 --json
  chronos bench throughput --cpuprofile cpu.out && go tool pprof -top cpu.out`

// benchFlags are the knobs of `chronos bench`. Zero sizes mean the default
// for the mode (full or --quick).
type benchFlags struct {
	quick       bool
	json        bool
	repeat      int
	cpuProfile  string
	instances   int
	procs       bool
	binary      string
	concurrency int
	logLevel    string
	statements  bool
	asyncCommit bool

	runs      int           // throughput
	triggers  int           // latency
	rate      int           // latency: triggers per second under load
	loadRate  int           // latency: background runs per second
	jobs      int           // schedule
	duration  time.Duration // schedule
	idle      time.Duration // idle
	scaleJobs int           // scale
}

// withDefaults fills the sizes not given on the command line.
func (f benchFlags) withDefaults() benchFlags {
	pick := func(v *int, full, quick int) {
		if *v <= 0 {
			*v = full
			if f.quick {
				*v = quick
			}
		}
	}
	pickD := func(v *time.Duration, full, quick time.Duration) {
		if *v <= 0 {
			*v = full
			if f.quick {
				*v = quick
			}
		}
	}
	pick(&f.runs, 50_000, 5_000)
	pick(&f.triggers, 500, 100)
	pick(&f.rate, 100, 50)
	pick(&f.loadRate, 1_000, 200)
	pick(&f.jobs, 20, 5)
	pickD(&f.duration, 60*time.Second, 5*time.Second)
	pickD(&f.idle, 60*time.Second, 10*time.Second)
	pick(&f.scaleJobs, 1_000_000, 100_000)
	if f.repeat <= 0 {
		f.repeat = 1
	}
	if f.instances <= 0 {
		f.instances = 1
	}
	if f.concurrency <= 0 {
		f.concurrency = 32
	}
	return f
}

// bencher carries what every scenario needs.
type bencher struct {
	flags benchFlags
	env   *environ
	log   *slog.Logger // for the in-process instances
	out   io.Writer    // progress lines (stderr)
}

// progress prints a progress line on stderr (tables and JSON go to stdout).
func (b *bencher) progress(format string, args ...any) {
	fmt.Fprintf(b.out, "bench: "+format+"\n", args...)
}

// benchResult is what one scenario run measured: its parameters and its
// figures, in the order they are printed.
type benchResult struct {
	Scenario string
	Params   []benchParam
	Metrics  []benchMetric
	Notes    []string
	// Failed says why the run broke a rule (missed occurrences, lost
	// runs); the figures are still printed, and bench exits 1.
	Failed []string
}

type benchParam struct {
	Name  string
	Value any
}

type benchMetric struct {
	Name  string
	Value float64
	Unit  string
}

func (r *benchResult) param(name string, v any) { r.Params = append(r.Params, benchParam{name, v}) }

func (r *benchResult) metric(name string, v float64, unit string) {
	r.Metrics = append(r.Metrics, benchMetric{name, v, unit})
}

// ms records a duration in milliseconds.
func (r *benchResult) ms(name string, d time.Duration) {
	r.metric(name, float64(d)/float64(time.Millisecond), "ms")
}

func (r *benchResult) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

func (r *benchResult) fail(format string, args ...any) {
	r.Failed = append(r.Failed, fmt.Sprintf(format, args...))
}

// Get returns a metric's value (tests and medians).
func (r *benchResult) Get(name string) (float64, bool) {
	for _, m := range r.Metrics {
		if m.Name == name {
			return m.Value, true
		}
	}
	return 0, false
}

// MarshalJSON is the --json form: one flat object per scenario run.
func (r *benchResult) MarshalJSON() ([]byte, error) {
	params := map[string]any{}
	for _, p := range r.Params {
		params[p.Name] = p.Value
	}
	metrics := map[string]any{}
	units := map[string]string{}
	for _, m := range r.Metrics {
		metrics[m.Name] = roundFigure(m.Value)
		units[m.Name] = m.Unit
	}
	return json.Marshal(struct {
		Scenario string            `json:"scenario"`
		Params   map[string]any    `json:"params"`
		Metrics  map[string]any    `json:"metrics"`
		Units    map[string]string `json:"units"`
		Notes    []string          `json:"notes,omitempty"`
		Failed   []string          `json:"failed,omitempty"`
	}{r.Scenario, params, metrics, units, r.Notes, r.Failed})
}

// roundFigure keeps JSON readable: 4 significant decimals are plenty.
func roundFigure(v float64) float64 {
	if v == math.Trunc(v) || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	return math.Round(v*10000) / 10000
}

// printTable prints a result as a short aligned table.
func printTable(w io.Writer, r *benchResult) {
	var ps []string
	for _, p := range r.Params {
		ps = append(ps, fmt.Sprintf("%s=%v", p.Name, p.Value))
	}
	fmt.Fprintf(w, "\n%s  (%s)\n", r.Scenario, strings.Join(ps, " "))
	width := 0
	for _, m := range r.Metrics {
		width = max(width, len(m.Name))
	}
	for _, m := range r.Metrics {
		fmt.Fprintf(w, "  %-*s  %12s %s\n", width, m.Name, formatFigure(m.Value), m.Unit)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	for _, f := range r.Failed {
		fmt.Fprintf(w, "  FAILED: %s\n", f)
	}
}

func formatFigure(v float64) string {
	switch a := math.Abs(v); {
	case v == math.Trunc(v) && a < 1e15:
		return fmt.Sprintf("%d", int64(v))
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// medianResult combines repeated runs of one scenario: the median of each
// figure, with the parameters of the first run.
func medianResult(runs []*benchResult) *benchResult {
	m := &benchResult{Scenario: runs[0].Scenario, Params: slices.Clone(runs[0].Params)}
	m.param("median_of", len(runs))
	for _, x := range runs[0].Metrics {
		var vs []float64
		for _, r := range runs {
			if v, ok := r.Get(x.Name); ok {
				vs = append(vs, v)
			}
		}
		slices.Sort(vs)
		med := vs[len(vs)/2]
		if len(vs)%2 == 0 {
			med = (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
		}
		m.metric(x.Name, med, x.Unit)
	}
	for _, r := range runs {
		m.Failed = append(m.Failed, r.Failed...)
	}
	return m
}

// parseBenchArgs splits scenario names from flags, which may come in any
// order (`bench all --quick` and `bench --quick all`).
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
	if len(names) == 0 {
		return nil, usagef("bench: name a scenario (%s or all; see `chronos bench --help`)", strings.Join(benchOrder, ", "))
	}
	var out []string
	for _, n := range names {
		if n == "all" {
			out = append(out, benchOrder...)
			continue
		}
		if _, ok := benchScenarios[n]; !ok {
			return nil, usagef("bench: unknown scenario %q (want %s or all)", n, strings.Join(benchOrder, ", "))
		}
		out = append(out, n)
	}
	return out, nil
}

func runBench(ctx context.Context, args []string, env *environ) error {
	fs := newFlagSet(env, "bench", "<scenario>... [flags]", benchHelp)
	var f benchFlags
	fs.BoolVar(&f.quick, "quick", false, "small sizes for every scenario (bench all --quick takes well under 2 minutes)")
	fs.BoolVar(&f.json, "json", false, "print one JSON object per scenario run instead of tables")
	fs.IntVar(&f.repeat, "repeat", 1, "run each scenario this many times and add the median of each figure")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the bench process (in-process instances included) to this file")
	fs.IntVar(&f.instances, "instances", 1, "chronos instances to start")
	fs.BoolVar(&f.procs, "procs", false, "start the instances as child processes (`chronos serve`) instead of in-process")
	fs.StringVar(&f.binary, "binary", "", "the chronos binary for child processes (default: this executable)")
	fs.IntVar(&f.concurrency, "concurrency", 32, "WORKER_CONCURRENCY of each instance")
	fs.BoolVar(&f.statements, "statements", false, "throughput, latency: route the instances through a counting proxy and break their statements down")
	fs.BoolVar(&f.asyncCommit, "async-commit", false, "in-process instances: the reactor gets its own pool with synchronous_commit=off (the API's stays synchronous)")
	fs.StringVar(&f.logLevel, "log-level", "error", "log level of the instances (debug, info, warn, error)")
	fs.IntVar(&f.runs, "runs", 0, "throughput: runs due at once (default 50000; quick 5000)")
	fs.IntVar(&f.triggers, "triggers", 0, "latency: triggers per phase (default 500; quick 100)")
	fs.IntVar(&f.rate, "rate", 0, "latency: triggers per second in the under-load phase (default 100; quick 50)")
	fs.IntVar(&f.loadRate, "load-rate", 0, "latency: background runs per second in the under-load phase (default 1000; quick 200)")
	fs.IntVar(&f.jobs, "jobs", 0, "schedule: jobs firing every second (default 20; quick 5)")
	fs.DurationVar(&f.duration, "duration", 0, "schedule: how long to watch them (default 60s; quick 5s)")
	fs.DurationVar(&f.idle, "idle", 0, "idle: how long to watch the idle instance (default 60s; quick 10s)")
	fs.IntVar(&f.scaleJobs, "scale-jobs", 0, "scale: jobs defined (default 1000000; quick 100000)")
	names, err := parseBenchArgs(fs, args)
	if err != nil {
		return err
	}
	f = f.withDefaults()
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return usagef("bench: invalid --log-level %q: must be debug, info, warn or error", f.logLevel)
	}
	if f.asyncCommit && f.procs {
		return usagef("bench: --async-commit needs in-process instances (serve has one pool)")
	}
	if f.binary == "" {
		f.binary, _ = os.Executable()
	}
	b := &bencher{flags: f, env: env, log: newLogger(env.stderr, level, "text"), out: env.stderr}

	if f.cpuProfile != "" {
		pf, err := os.Create(f.cpuProfile)
		if err != nil {
			return fmt.Errorf("bench: cpuprofile: %w", err)
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return fmt.Errorf("bench: cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	b.progress("%d CPUs, load average %s", runtime.NumCPU(), loadAverage())

	var failed []string
	for _, name := range names {
		var runs []*benchResult
		for i := range f.repeat {
			if ctx.Err() != nil {
				return fmt.Errorf("bench: interrupted")
			}
			if f.repeat > 1 {
				b.progress("%s: run %d of %d", name, i+1, f.repeat)
			} else {
				b.progress("%s", name)
			}
			began := time.Now()
			r, err := benchScenarios[name](ctx, b)
			if err != nil {
				return fmt.Errorf("bench %s: %w", name, err)
			}
			b.progress("%s took %s", name, time.Since(began).Round(100*time.Millisecond))
			r.param("load_avg", loadAverage())
			runs = append(runs, r)
			b.emit(r)
			failed = append(failed, r.Failed...)
		}
		if len(runs) > 1 {
			b.emit(medianResult(runs))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("bench: %s", strings.Join(failed, "; "))
	}
	return nil
}

// emit prints one result as a table or a JSON line.
func (b *bencher) emit(r *benchResult) {
	if b.flags.json {
		line, err := json.Marshal(r)
		if err != nil {
			fmt.Fprintf(b.env.stderr, "bench: encode result: %v\n", err)
			return
		}
		fmt.Fprintln(b.env.stdout, string(line))
		return
	}
	printTable(b.env.stdout, r)
}

// loadAverage is the 1-minute load average from /proc/loadavg ("?" when
// unavailable): the machine may be shared, so every result says how busy
// it was.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	fields := strings.Fields(string(raw))
	if len(fields) < 3 {
		return "?"
	}
	return strings.Join(fields[:3], " ")
}
