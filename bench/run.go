package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"time"
)

// scenario is one named measurement; run runs it once.
type scenario struct {
	name string
	run  func(ctx context.Context, b *runner) (*result, error)
}

// scenarios are every scenario, in the order `all` runs them.
var scenarios = []scenario{
	{"throughput", benchThroughput},
	{"latency", benchLatency},
	{"schedule", benchSchedule},
	{"idle", benchIdle},
	{"scale", benchScale},
	{"burst", benchBurst},
	{"herd", benchHerd},
	{"create", benchCreate},
	{"sustained", benchSustained},
	{"limits", benchLimits},
	{"limit-rate", benchLimitRate},
	{"hosts", benchHosts},
}

// Names returns the scenario names in the order `all` runs them.
func Names() []string {
	names := make([]string, len(scenarios))
	for i, s := range scenarios {
		names[i] = s.name
	}
	return names
}

func lookup(name string) (scenario, bool) {
	for _, s := range scenarios {
		if s.name == name {
			return s, true
		}
	}
	return scenario{}, false
}

// Resolve turns the names given on the command line into the scenarios
// to run, in that order: "all" stands for every scenario (Names). An
// unknown name, or none at all, is an error.
func Resolve(names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("name a scenario (%s or all)", strings.Join(Names(), ", "))
	}
	var out []string
	for _, n := range names {
		if n == "all" {
			out = append(out, Names()...)
			continue
		}
		if _, ok := lookup(n); !ok {
			return nil, fmt.Errorf("unknown scenario %q (want %s or all)", n, strings.Join(Names(), ", "))
		}
		out = append(out, n)
	}
	return out, nil
}

// runner carries what every scenario needs.
type runner struct {
	cfg Config

	peerBin string // the River peer, once built (peer.go)
	peerTmp string // its temporary directory, removed by Run

	progressMu sync.Mutex // progress lines come from concurrent clients
}

// progress prints a progress line on Stderr (tables and JSON go to Stdout).
func (b *runner) progress(format string, args ...any) {
	b.progressMu.Lock()
	defer b.progressMu.Unlock()
	fmt.Fprintf(b.cfg.Stderr, "bench: "+format+"\n", args...)
}

// Run runs the named scenarios (see Resolve) cfg.Repeat times each,
// printing each result, and the medians when repeated. It returns an
// error when a scenario could not run, or when one broke a rule (a missed
// occurrence, a lost run): the figures are printed all the same.
func Run(ctx context.Context, cfg Config, names []string) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	names, err := Resolve(names)
	if err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	b := &runner{cfg: cfg}
	defer func() {
		if b.peerTmp != "" {
			os.RemoveAll(b.peerTmp)
		}
	}()

	if cfg.CPUProfile != "" {
		pf, err := os.Create(cfg.CPUProfile)
		if err != nil {
			return fmt.Errorf("cpuprofile: %w", err)
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return fmt.Errorf("cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	b.progress("%d CPUs, load average %s, CPU reference %.2f µs (lower is faster)",
		runtime.NumCPU(), loadAverage(), microseconds(cpuReference()))

	var failed []string
	for _, name := range names {
		sc, _ := lookup(name)
		var runs []*result
		for i := range cfg.Repeat {
			if ctx.Err() != nil {
				return fmt.Errorf("interrupted")
			}
			if cfg.Repeat > 1 {
				b.progress("%s: run %d of %d", name, i+1, cfg.Repeat)
			} else {
				b.progress("%s", name)
			}
			// The machine's speed as the run starts: read after it, the
			// reading caught the previous run's teardown (a dropped
			// database, the peer exiting) and came out up to twice as slow.
			ref := cpuReference()
			began := time.Now()
			r, err := sc.run(ctx, b)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			b.progress("%s took %s", name, time.Since(began).Round(100*time.Millisecond))
			r.param("load_avg", loadAverage())
			r.param("cpu_ref_us", microseconds(ref))
			runs = append(runs, r)
			b.emit(r)
			failed = append(failed, r.Failed...)
		}
		if len(runs) > 1 {
			b.emit(medianResult(runs))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%s", strings.Join(failed, "; "))
	}
	return nil
}

// emit prints one result as a table or a JSON line.
func (b *runner) emit(r *result) {
	if b.cfg.JSON {
		line, err := json.Marshal(r)
		if err != nil {
			b.progress("encode result: %v", err)
			return
		}
		fmt.Fprintln(b.cfg.Stdout, string(line))
		return
	}
	printTable(b.cfg.Stdout, r)
}
