package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/chronoshq/chronos/internal/instant"
)

// The side-by-side peer (burst --peer river): River, the best Go Postgres
// queue, burning down the same number of jobs, each one HTTP POST to the
// same local target, on the same database server in the same run.
//
// River stays out of chronos's go.mod: the peer is a module of its own in
// bench/peer/river, built with `go build` into a temporary directory the
// first time a scenario asks for it, and run as a child process that
// reads its flags and prints one JSON object (peerReport) on stdout.

// PeerRiver is the only peer so far.
const PeerRiver = "river"

// peerRiverDir is the peer's module, relative to the repository root.
const peerRiverDir = "bench/peer/river"

// peerReport is what the peer prints.
type peerReport struct {
	Jobs       int     `json:"jobs"`
	Workers    int     `json:"workers"`
	Version    string  `json:"version"`
	InsertMS   float64 `json:"insert_ms"`
	Start      string  `json:"start"`
	Completed  string  `json:"completed"`
	BurnMS     float64 `json:"burn_ms"`
	JobsPerSec float64 `json:"jobs_per_s"`
	Failed     int     `json:"failed"`
	CPUMS      float64 `json:"cpu_ms"` // the peer process's CPU from T' to its last completion
}

// peerBinary builds the River peer once per bench run and returns its
// path.
func (b *runner) peerBinary(ctx context.Context) (string, error) {
	if b.peerBin != "" {
		return b.peerBin, nil
	}
	src, err := findPeerDir(b.cfg.PeerDir)
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "chronos-bench-peer-")
	if err != nil {
		return "", fmt.Errorf("peer: %w", err)
	}
	bin := filepath.Join(dir, "river-peer")
	b.progress("peer: building the River peer from %s", src)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	cmd.Dir = src
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("peer: go build in %s: %w\n%s", src, err, stderr.String())
	}
	b.peerBin, b.peerTmp = bin, dir
	return bin, nil
}

// findPeerDir is the peer's module directory: dir when set, else
// bench/peer/river above the working directory or the executable.
func findPeerDir(dir string) (string, error) {
	if dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
			return "", fmt.Errorf("peer: --peer-dir %s: %w", dir, err)
		}
		return dir, nil
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, s := range starts {
		for d := s; ; d = filepath.Dir(d) {
			p := filepath.Join(d, peerRiverDir)
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return p, nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", errors.New("peer: " + peerRiverDir + " not found above the working directory or the executable: run from the repository or pass --peer-dir")
}

// runRiverPeer burns n jobs down with the River peer in e's database, each
// a POST to the target's /river, and adds its figures and the ratio of
// chronos's runs/s to River's jobs/s (both from the target's arrivals)
// to res.
func (e *env) runRiverPeer(ctx context.Context, res *result, n int, chronosPerSec float64) error {
	bin, err := e.b.peerBinary(ctx)
	if err != nil {
		return err
	}
	e.b.progress("peer: River burning down %d jobs", n)
	cmd := exec.CommandContext(ctx, bin, "-dsn", e.dsn, "-jobs", fmt.Sprint(n), "-target", e.target.base+"/river",
		"-workers", "100", "-fetch-cooldown", "2ms")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, e.b.cfg.Stderr
	// Postgres's CPU and this process's (the target's, beside the idle
	// chronos instances) are read every 20 ms while the peer runs: its
	// window, T' to its last completion, is known only from its report.
	trace := traceCPU(ctx, newCPUMeter(ctx, e), 20*time.Millisecond)
	err = cmd.Run()
	trace.stop()
	if err != nil {
		return fmt.Errorf("peer: river: %w", err)
	}
	var r peerReport
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		return fmt.Errorf("peer: river's report %q: %w", stdout.String(), err)
	}
	start, err := time.Parse(time.RFC3339Nano, r.Start)
	if err != nil {
		return fmt.Errorf("peer: river's start: %w", err)
	}
	var first, last time.Time
	seen := map[int64]bool{}
	for _, a := range e.target.snapshot() {
		if a.path != "/river" {
			continue
		}
		if first.IsZero() || a.at.Before(first) {
			first = a.at
		}
		last = instant.Later(last, a.at)
		seen[a.runID] = true
	}
	if len(seen) != n || r.Failed > 0 {
		res.fail("peer: river delivered %d of %d jobs (%d failed)", len(seen), n, r.Failed)
	}
	burn := last.Sub(start)
	perSec := float64(n) / burn.Seconds()
	res.metric("river.jobs_per_s", perSec, "jobs/s")
	res.ms("river.first_delivery", first.Sub(start))
	res.ms("river.last_delivery", burn)
	res.ms("river.all_completed", time.Duration(r.BurnMS*float64(time.Millisecond)))
	res.ms("river.insert", time.Duration(r.InsertMS*float64(time.Millisecond)))
	res.target("ratio_to_river", chronosPerSec/perSec, "×", "≥ 1.5")
	e.reportPeerCPU(res, trace, r, start, n)
	res.note("peer: River %s, %d workers, FetchCooldown 2ms; its jobs inserted (COPY) before its client started at T', figures from T'", r.Version, r.Workers)
	return nil
}

// reportPeerCPU adds River's CPU per job from T' to its last completion:
// its own process's (from its report), this process's (the target, which
// both peers share, and the idle chronos instances) and Postgres's, so
// that the two peers' costs stand side by side. Chronos's figures
// (chronos_cpu_per_run, postgres_cpu_per_run) also hold materializing its
// runs, from a lookahead before T; River's jobs were inserted before T'.
func (e *env) reportPeerCPU(res *result, trace *cpuTrace, r peerReport, start time.Time, n int) {
	res.metric("river.cpu_per_job", r.CPUMS*1000/float64(n), "µs")
	completed, err := time.Parse(time.RFC3339Nano, r.Completed)
	before, after, ok := trace.between(start, completed)
	if err != nil || !ok {
		res.metric("river.bench_cpu_per_job", nan, "µs")
		res.metric("river.postgres_cpu_per_job", nan, "µs")
		res.note("peer: no CPU samples bracket River's window (%v)", err)
		return
	}
	per := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) / float64(n) }
	res.metric("river.bench_cpu_per_job", per(after.self-before.self), "µs")
	if trace.meter.postmaster == 0 {
		res.metric("river.postgres_cpu_per_job", nan, "µs")
		res.note("river.postgres_cpu_per_job n/a: %s", trace.meter.why)
		return
	}
	res.metric("river.postgres_cpu_per_job", per(after.postgres-before.postgres), "µs")
}
