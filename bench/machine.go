package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// loadAverage is the load averages from /proc/loadavg ("?" when
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

// rssKiB reads VmRSS and VmHWM (peak) of a process, in KiB.
func rssKiB(pid int) (rss, peak int64, err error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		switch k {
		case "VmRSS":
			rss = n
		case "VmHWM":
			peak = n
		}
	}
	return rss, peak, nil
}

// clockTick is the unit of the CPU times in /proc/<pid>/stat (USER_HZ,
// 100 on every Linux architecture Go supports; Go cannot ask sysconf
// without cgo).
const clockTick = 10 * time.Millisecond

// procStat is what the bench reads of /proc/<pid>/stat.
type procStat struct {
	comm   string
	ppid   int
	cpu    time.Duration // utime + stime
	waited time.Duration // cutime + cstime: children it has waited for
}

// readProcStat parses /proc/<pid>/stat. The command name is in
// parentheses and may hold spaces, so fields are counted after the last
// ')'.
func readProcStat(pid int) (procStat, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	s := string(raw)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	// After ")": state(3) ppid(4) ... utime(14) stime(15) cutime(16) cstime(17).
	f := strings.Fields(s[closing+1:])
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	num := func(i int) int64 { n, _ := strconv.ParseInt(f[i], 10, 64); return n }
	return procStat{
		comm:   s[open+1 : closing],
		ppid:   int(num(1)),
		cpu:    time.Duration(num(11)+num(12)) * clockTick,
		waited: time.Duration(num(13)+num(14)) * clockTick,
	}, nil
}

// selfCPU is the CPU time (user + system) this process has used.
func selfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// treeCPU is the CPU time of process root and of every child it has or
// has waited for: a Postgres postmaster and its backends, including those
// that exited since (their time moved into the postmaster's cutime and
// cstime).
func treeCPU(root int) (time.Duration, error) {
	st, err := readProcStat(root)
	if err != nil {
		return 0, err
	}
	total := st.cpu + st.waited
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == root {
			continue
		}
		c, err := readProcStat(pid)
		if err != nil || c.ppid != root {
			continue // gone meanwhile, or not a child
		}
		total += c.cpu
	}
	return total, nil
}
