//go:build linux

package faults

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgServer is a throwaway Postgres cluster of one test's own, in a temp
// dir on a free port, that the test may crash: unlike the shared test
// server, it can be killed with SIGKILL and started again. Durability is
// left as a production server has it (fsync, synchronous_commit and
// full_page_writes on), since what a crash loses is the point.
//
// The postmaster is started directly as a child of the test process (not
// through pg_ctl, whose postmaster is re-parented to PID 1): the test
// then reaps it itself, and a killed postmaster's pid in postmaster.pid
// is gone at once rather than a zombie that blocks the restart until
// PID 1 reaps it (which, in a container, may be never).
type pgServer struct {
	bin  string // directory holding initdb and postgres
	dir  string // the temp dir: data/, the socket, server.log
	port int
	cred *syscall.Credential // as root: the cluster runs as user postgres (initdb refuses root)

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	starts int
}

// newPGServer initdbs and starts a cluster, or skips the test when the
// Postgres server binaries (or, as root, a postgres user) are missing. It
// is stopped and removed at cleanup.
func newPGServer(t testing.TB) *pgServer {
	t.Helper()
	bin, err := pgBinDir()
	if err != nil {
		t.Skipf("no Postgres server binaries for a throwaway cluster: %v", err)
	}
	s := &pgServer{bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skipf("running as root and there is no user postgres for initdb: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	s.makeDir(t, "chronos-crash-pg-")
	start := time.Now()
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", s.data(), "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	t.Logf("throwaway cluster: initdb (%s) in %s", bin, time.Since(start).Round(time.Millisecond))
	s.port = freePort(t)
	s.start(t)
	return s
}

// makeDir gives the cluster a directory of its own, named pattern (as
// os.MkdirTemp), owned by the user it runs as; at cleanup the server is
// stopped and the directory removed, or kept for inspection when the test
// failed. Not t.TempDir: its parent is private to this user, and the
// cluster may run as another.
func (s *pgServer) makeDir(t testing.TB, pattern string) {
	t.Helper()
	var err error
	if s.dir, err = os.MkdirTemp("", pattern); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.stop()
		if !t.Failed() {
			_ = os.RemoveAll(s.dir)
		} else {
			t.Logf("the cluster is kept for inspection: %s (server.log)", s.dir)
		}
	})
	if s.cred != nil {
		if err := os.Chown(s.dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
}

func (s *pgServer) data() string { return filepath.Join(s.dir, "data") }

// url is the DSN of database db, as the superuser postgres.
func (s *pgServer) url(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// start launches the postmaster (crash recovery, after a crash) and waits
// until it accepts connections.
func (s *pgServer) start(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	if s.cmd != nil {
		s.mu.Unlock()
		t.Fatalf("postgres: start while running")
	}
	s.starts++
	logf, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		s.mu.Unlock()
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), "-D", s.data(), "-p", strconv.Itoa(s.port), "-k", s.dir,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "max_connections=150",
		// Production durability, stated rather than assumed.
		"-c", "fsync=on", "-c", "synchronous_commit=on", "-c", "full_page_writes=on",
		"-c", "log_min_messages=warning")
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own session: a ^C of the test does not reach it (cleanup stops
	// it), and it never takes the test's process group down with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: s.cred}
	if err := cmd.Start(); err != nil {
		s.mu.Unlock()
		logf.Close()
		t.Fatalf("postgres: start: %v", err)
	}
	exited := make(chan struct{})
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(exited)
	}()

	deadline := time.Now().Add(90 * time.Second) // crash recovery of a busy minute's WAL, on a loaded machine
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, s.url("postgres"))
		if err == nil {
			err = conn.Ping(ctx)
			conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return
		}
		select {
		case <-exited:
			t.Fatalf("postgres exited at start (%v)\n%s", err, s.logTail(30))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("postgres not accepting connections within 90 s: %v\n%s", err, s.logTail(30))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// crash kills the server as a power cut would, as far as its memory
// goes: the postmaster (its pid read from postmaster.pid) and every one
// of its children are frozen with SIGSTOP, then killed with SIGKILL, so no
// process runs on after the instant of the crash. Killing the postmaster
// alone would let its backends (each in a session of its own, so out of
// reach of a process-group kill) finish what they are doing; a
// synchronous commit among them would flush the WAL buffers and soften
// the crash. What the server had written to the kernel survives (a
// process kill is no OS crash); what sat in its WAL buffers, such as
// asynchronous commits the WAL writer had not written yet, is lost. It
// returns the instant of the crash.
func (s *pgServer) crash(t testing.TB) time.Time {
	t.Helper()
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil {
		t.Fatalf("postgres: crash while down")
	}
	pid, err := s.postmasterPID()
	if err != nil {
		t.Fatalf("postgres: %v", err)
	}
	if pid != cmd.Process.Pid {
		t.Fatalf("postmaster.pid names %d, but the postmaster started is %d", pid, cmd.Process.Pid)
	}
	at := time.Now()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP postmaster %d: %v", pid, err)
	}
	// Stopped, the postmaster forks no more: its children are final.
	kids := childrenOf(pid)
	for _, k := range kids {
		_ = syscall.Kill(k, syscall.SIGSTOP) // one may have just exited
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL postmaster %d: %v", pid, err)
	}
	for _, k := range kids {
		_ = syscall.Kill(k, syscall.SIGKILL)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("postmaster %d still there 10 s after SIGKILL", pid)
	}
	// The children are PID 1's to reap; gone or zombies, they no longer
	// hold the shared memory that would stop the restart.
	deadline := time.Now().Add(10 * time.Second)
	for _, k := range kids {
		for running(k) {
			if time.Now().After(deadline) {
				t.Fatalf("postgres child %d still running 10 s after SIGKILL", k)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	s.mu.Lock()
	s.cmd = nil
	s.mu.Unlock()
	t.Logf("postgres crashed at %s: SIGKILL to postmaster %d and its %d children", at.Format("15:04:05.000"), pid, len(kids))
	return at
}

// stop ends the server at cleanup: an immediate shutdown, then SIGKILL.
func (s *pgServer) stop() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGQUIT) // immediate shutdown: the postmaster ends its children
	awaitExit(exited, 15*time.Second, func() {
		for _, k := range childrenOf(cmd.Process.Pid) {
			_ = syscall.Kill(k, syscall.SIGKILL)
		}
		_ = cmd.Process.Kill()
	})
}

// postmasterPID reads the postmaster's pid from the first line of
// postmaster.pid.
func (s *pgServer) postmasterPID() (int, error) {
	b, err := os.ReadFile(filepath.Join(s.data(), "postmaster.pid"))
	if err != nil {
		return 0, fmt.Errorf("read postmaster.pid: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		return 0, fmt.Errorf("postmaster.pid: first line %q is no pid", line)
	}
	return pid, nil
}

// createDB creates database name and returns its DSN.
func (s *pgServer) createDB(t testing.TB, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.url("postgres"))
	if err != nil {
		t.Fatalf("connect to the throwaway cluster: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	return s.url(name)
}

// logTail returns the last n lines of the server's log.
func (s *pgServer) logTail(n int) string {
	b, err := os.ReadFile(filepath.Join(s.dir, "server.log"))
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lastN(lines, n), "\n")
}

// pgBinDir finds initdb and postgres: on PATH, else the newest
// /usr/lib/postgresql/*/bin (Debian's layout, as scripts/testdb.sh).
func pgBinDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if p, err = filepath.EvalSymlinks(p); err == nil && fileExists(filepath.Join(filepath.Dir(p), "postgres")) {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgMajor(dirs[i]) > pgMajor(dirs[j]) })
	for _, d := range dirs {
		if fileExists(filepath.Join(d, "initdb")) && fileExists(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", errors.New("neither initdb on PATH nor /usr/lib/postgresql/*/bin/initdb")
}

// pgMajor is the version in /usr/lib/postgresql/<version>/bin (0 if none).
func pgMajor(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
// The server keeps it across restarts, so the instances' DSNs stay true.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// childrenOf lists the processes whose parent is pid, from /proc.
func childrenOf(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _, ok := procStat(p); ok && ppid == pid {
			out = append(out, p)
		}
	}
	return out
}

// running reports whether pid exists and is not a zombie.
func running(pid int) bool {
	_, state, ok := procStat(pid)
	return ok && state != 'Z' && state != 'X'
}

// procStat reads a process's parent and state from /proc/<pid>/stat.
func procStat(pid int) (ppid int, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 || len(f[0]) != 1 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	return ppid, f[0][0], err == nil
}

// newStandby makes a streaming standby of primary with pg_basebackup -R
// and starts it.
func newStandby(t testing.TB, primary *pgServer) *pgServer {
	t.Helper()
	s := &pgServer{bin: primary.bin, cred: primary.cred}
	s.makeDir(t, "chronos-standby-pg-")
	cmd := exec.Command(filepath.Join(s.bin, "pg_basebackup"), "-h", "127.0.0.1", "-p", strconv.Itoa(primary.port),
		"-U", "postgres", "-D", s.data(), "-R", "-X", "stream", "-c", "fast")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pg_basebackup: %v\n%s", err, out)
	}
	s.port = freePort(t)
	s.start(t)
	return s
}
