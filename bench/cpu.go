package bench

import (
	"context"
	"fmt"
	"time"
)

// cpuMeter samples the CPU time of the chronos instances and of the
// Postgres server, for figures of CPU per run.
//
// In-process instances share the bench's process, so their figure is the
// whole process's (getrusage): instances, target and load generator
// together. Child processes (--procs) are read from /proc/<pid>/stat, and
// the bench process is reported apart. Postgres is counted only when it
// runs on this machine: the postmaster of the bench's connection, its
// backends and auxiliary processes, and the backends that exited
// meanwhile; every database on that server counts.
type cpuMeter struct {
	e          *env
	postmaster int    // 0: Postgres not measurable here
	why        string // why not, when postmaster is 0
}

// cpuSample is one reading of the meter.
type cpuSample struct {
	chronos  time.Duration // the instances (in-process: the whole bench process)
	self     time.Duration // the bench process
	postgres time.Duration // the server's processes; 0 when not measurable
}

// newCPUMeter finds the Postgres server's postmaster, when it runs here:
// the bench's connection comes from 127.0.0.1, ::1 or a Unix socket, and
// its backend is a local process named postgres whose parent is one too.
func newCPUMeter(ctx context.Context, e *env) *cpuMeter {
	m := &cpuMeter{e: e}
	var (
		pid  int
		addr string
	)
	if err := e.db.Pool.QueryRow(ctx, "SELECT pg_backend_pid(), coalesce(host(inet_server_addr()), '')").Scan(&pid, &addr); err != nil {
		m.why = fmt.Sprintf("cannot ask the server: %v", err)
		return m
	}
	if addr != "" && addr != "127.0.0.1" && addr != "::1" {
		m.why = "the server is not on this machine (" + addr + ")"
		return m
	}
	backend, err := readProcStat(pid)
	if err != nil || backend.comm != "postgres" {
		m.why = "the server's processes are not visible here"
		return m
	}
	if pm, err := readProcStat(backend.ppid); err != nil || pm.comm != "postgres" {
		m.why = "the server's postmaster is not visible here"
		return m
	}
	m.postmaster = backend.ppid
	return m
}

// sample reads the meter.
func (m *cpuMeter) sample() (cpuSample, error) {
	var s cpuSample
	var err error
	if s.self, err = selfCPU(); err != nil {
		return s, err
	}
	for _, in := range m.e.insts {
		c, ok := in.(*childProcess)
		if !ok {
			continue
		}
		st, err := readProcStat(c.pid())
		if err != nil {
			return s, fmt.Errorf("CPU of %s: %w", c.name(), err)
		}
		s.chronos += st.cpu
	}
	if m.e.inProcess() {
		s.chronos += s.self
	}
	if m.postmaster != 0 {
		if s.postgres, err = treeCPU(m.postmaster); err != nil {
			return s, fmt.Errorf("CPU of postgres: %w", err)
		}
	}
	return s, nil
}

// report adds CPU per unit (a run, a job) between two samples, in µs.
func (m *cpuMeter) report(res *result, before, after cpuSample, n int, unit string) {
	m.reportAs(res, "", before, after, n, unit)
}

// reportAs is report with each figure's name prefixed ("batch.").
func (m *cpuMeter) reportAs(res *result, prefix string, before, after cpuSample, n int, unit string) {
	per := func(d time.Duration) float64 {
		if n <= 0 {
			return nan
		}
		return float64(d) / float64(time.Microsecond) / float64(n)
	}
	res.metric(prefix+"chronos_cpu_per_"+unit, per(after.chronos-before.chronos), "µs")
	if !m.e.inProcess() {
		res.metric(prefix+"bench_cpu_per_"+unit, per(after.self-before.self), "µs")
	} else if prefix == "" {
		res.note("chronos_cpu_per_%s is the whole bench process (in-process instances, target, load): --procs measures the instances alone", unit)
	}
	if m.postmaster == 0 {
		res.metric(prefix+"postgres_cpu_per_"+unit, nan, "µs")
		if prefix == "" {
			res.note("postgres_cpu_per_%s n/a: %s", unit, m.why)
		}
		return
	}
	res.metric(prefix+"postgres_cpu_per_"+unit, per(after.postgres-before.postgres), "µs")
}
