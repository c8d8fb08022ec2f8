package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/bus"
	chttp "github.com/chronoshq/chronos/http"
	"github.com/chronoshq/chronos/listeners"
	"github.com/chronoshq/chronos/reactor"
	"github.com/chronoshq/chronos/sql"
)

// defaultAdminDSN is the server the bench creates its throwaway databases
// on when neither DATABASE_URL nor TEST_DATABASE_URL is set.
const defaultAdminDSN = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// benchEnv is one scenario's world: a database, the local target, the
// bench's own pool on that database, and the instances it started.
type benchEnv struct {
	b      *bencher
	dsn    string
	dbName string
	admin  string // DSN of the server's maintenance database; "" when the database is not ours
	db     *sql.DB
	target *benchTarget
	insts  []benchInstance
	proxy  *countingProxy // --statements: between the instances and Postgres
}

// newEnv prepares a migrated database (a throwaway one unless DATABASE_URL
// is set) and starts the target.
func (b *bencher) newEnv(ctx context.Context) (*benchEnv, error) {
	e := &benchEnv{b: b}
	if dsn := b.env.getenv("DATABASE_URL"); dsn != "" {
		e.dsn = dsn
	} else {
		admin := b.env.getenv("TEST_DATABASE_URL")
		if admin == "" {
			admin = defaultAdminDSN
		}
		name, dsn, err := createBenchDB(ctx, admin)
		if err != nil {
			return nil, err
		}
		e.admin, e.dbName, e.dsn = admin, name, dsn
	}
	if err := sql.Migrate(ctx, e.dsn); err != nil {
		e.close()
		return nil, fmt.Errorf("migrate: %w", err)
	}
	db, err := sql.Open(ctx, e.dsn, "chronos-bench")
	if err != nil {
		e.close()
		return nil, err
	}
	e.db = db
	if e.dbName == "" {
		if err := db.Pool.QueryRow(ctx, "SELECT current_database()").Scan(&e.dbName); err != nil {
			e.close()
			return nil, fmt.Errorf("current database: %w", err)
		}
	}
	t, err := startTarget()
	if err != nil {
		e.close()
		return nil, err
	}
	e.target = t
	return e, nil
}

// close stops the instances and the target, deletes the bench's jobs from
// a database that is not ours, and drops a throwaway one.
func (e *benchEnv) close() {
	var wg sync.WaitGroup
	for _, in := range e.insts {
		wg.Go(func() {
			if err := in.stop(); err != nil {
				e.b.progress("stop %s: %v", in.name(), err)
			}
		})
	}
	wg.Wait()
	if e.proxy != nil {
		e.proxy.close()
	}
	if e.target != nil {
		e.target.close()
	}
	if e.db != nil {
		if e.admin == "" {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			if _, err := e.db.Pool.Exec(ctx, "DELETE FROM jobs WHERE name LIKE 'bench-%'"); err != nil {
				e.b.progress("delete bench jobs: %v", err)
			}
			cancel()
		}
		e.db.Close()
	}
	if e.admin != "" {
		if err := dropBenchDB(e.admin, e.dbName); err != nil {
			e.b.progress("drop database %s: %v", e.dbName, err)
		}
	}
}

// createBenchDB creates an empty database on the server of admin and
// returns its name and DSN.
func createBenchDB(ctx context.Context, admin string) (name, dsn string, err error) {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", "", fmt.Errorf("connect to %s (set DATABASE_URL or TEST_DATABASE_URL): %w", redactDSN(admin), err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	buf := make([]byte, 4)
	_, _ = rand.Read(buf)
	name = "chronos_bench_" + hex.EncodeToString(buf)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", "", fmt.Errorf("create database %s: %w", name, err)
	}
	dsn, err = withDatabase(admin, name)
	if err != nil {
		_ = dropBenchDB(admin, name)
		return "", "", err
	}
	return name, dsn, nil
}

// dropBenchDB drops a throwaway database, closing what still uses it.
func dropBenchDB(admin, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	return err
}

// withDatabase returns dsn (URL or keyword/value form) pointing at db.
func withDatabase(dsn, db string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("parse %s: %w", redactDSN(dsn), err)
		}
		u.Path = "/" + db
		return u.String(), nil
	}
	return dsn + " dbname=" + db, nil
}

// withParam adds a run-time parameter to dsn (URL or keyword/value form).
func withParam(dsn, name, value string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if u, err := url.Parse(dsn); err == nil {
			q := u.Query()
			q.Set(name, value)
			u.RawQuery = q.Encode()
			return u.String()
		}
	}
	return dsn + " " + name + "=" + value
}

// redactDSN hides a URL's password in messages.
func redactDSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		return u.Redacted()
	}
	return "the database server"
}

// createJob creates a job through the first instance's API and returns it.
func (e *benchEnv) createJob(ctx context.Context, j map[string]any) (*chronos.Job, error) {
	var out chronos.Job
	if err := e.api(ctx, "POST", "/v1/jobs", j, nethttp.StatusCreated, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// api makes one API call to the first instance and decodes the answer.
func (e *benchEnv) api(ctx context.Context, method, path string, body any, want int, out any) error {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := nethttp.NewRequestWithContext(ctx, method, e.insts[0].url()+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.target.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: read: %w", method, path, err)
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: status %d: %s", method, path, resp.StatusCode, bytes.TrimSpace(raw))
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("%s %s: decode: %w", method, path, err)
		}
	}
	return nil
}

// farFuture is a one-shot job's run_at that never comes during a bench:
// the job exists only to be triggered, or to own inserted runs.
func farFuture() string { return time.Now().AddDate(10, 0, 0).UTC().Format(time.RFC3339) }

// --- the target -----------------------------------------------------------

// benchArrival is one request the target received.
type benchArrival struct {
	at          time.Time
	path        string
	runID       int64
	scheduledAt time.Time
}

// benchTarget is the local webhook target: it answers 204 at once and
// records when each request arrived. It also owns the HTTP client the
// bench calls the API with.
type benchTarget struct {
	srv    *nethttp.Server
	ln     net.Listener
	base   string
	client *nethttp.Client
	done   chan struct{}

	mu       sync.Mutex
	arrivals []benchArrival
	waiters  map[int64]chan time.Time // run id -> who waits for its arrival
	early    map[int64]time.Time      // arrivals nobody waited for yet (latency)
	watch    bool                     // keep early/waiters (latency only)
}

func startTarget() (*benchTarget, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("target: listen: %w", err)
	}
	t := &benchTarget{
		ln:      ln,
		base:    "http://" + ln.Addr().String(),
		waiters: map[int64]chan time.Time{},
		early:   map[int64]time.Time{},
		done:    make(chan struct{}),
		client: &nethttp.Client{Timeout: time.Minute, Transport: &nethttp.Transport{
			MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute,
		}},
	}
	t.srv = &nethttp.Server{Handler: t, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(t.done)
		_ = t.srv.Serve(ln)
	}()
	return t, nil
}

// ServeHTTP records the arrival and answers 204.
func (t *benchTarget) ServeHTTP(w nethttp.ResponseWriter, r *nethttp.Request) {
	at := time.Now()
	a := benchArrival{at: at, path: r.URL.Path}
	a.runID, _ = strconv.ParseInt(r.Header.Get(reactor.HeaderRunID), 10, 64)
	a.scheduledAt, _ = time.Parse(time.RFC3339Nano, r.Header.Get(reactor.HeaderScheduledAt))
	t.mu.Lock()
	t.arrivals = append(t.arrivals, a)
	if t.watch {
		if ch, ok := t.waiters[a.runID]; ok {
			delete(t.waiters, a.runID)
			ch <- at
		} else if _, seen := t.early[a.runID]; !seen {
			t.early[a.runID] = at
		}
	}
	t.mu.Unlock()
	_, _ = io.Copy(io.Discard, r.Body)
	w.WriteHeader(nethttp.StatusNoContent)
}

// count is how many requests arrived so far.
func (t *benchTarget) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.arrivals)
}

// snapshot returns a copy of the arrivals so far.
func (t *benchTarget) snapshot() []benchArrival {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]benchArrival(nil), t.arrivals...)
}

// await returns when the run's request arrived (it may already have: the
// trigger's own response can come after the delivery).
func (t *benchTarget) await(ctx context.Context, runID int64) (time.Time, error) {
	t.mu.Lock()
	if at, ok := t.early[runID]; ok {
		delete(t.early, runID)
		t.mu.Unlock()
		return at, nil
	}
	ch := make(chan time.Time, 1)
	t.waiters[runID] = ch
	t.mu.Unlock()
	select {
	case at := <-ch:
		return at, nil
	case <-ctx.Done():
		t.mu.Lock()
		delete(t.waiters, runID)
		t.mu.Unlock()
		return time.Time{}, fmt.Errorf("run %d never reached the target: %w", runID, ctx.Err())
	}
}

// waitCount waits until at least n requests arrived, polling memory only.
func (t *benchTarget) waitCount(ctx context.Context, n int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for t.count() < n {
		select {
		case <-ctx.Done():
			return fmt.Errorf("target received %d of %d requests within %s", t.count(), n, timeout)
		case <-time.After(2 * time.Millisecond):
		}
	}
	return nil
}

func (t *benchTarget) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = t.srv.Shutdown(ctx)
	<-t.done
	t.client.CloseIdleConnections()
}

// --- instances ------------------------------------------------------------

// benchInstance is one chronos instance the bench started.
type benchInstance interface {
	name() string
	url() string
	pid() int // the process whose RSS it is
	isLeader(ctx context.Context) bool
	stop() error
}

// startInstances starts n instances (in-process, or child processes with
// --procs, or when child is true) and waits until each is ready.
func (e *benchEnv) startInstances(ctx context.Context, n int, child bool) error {
	dsn := e.dsn
	if e.b.flags.statements {
		hostPort, err := dsnHostPort(e.dsn)
		if err != nil {
			return fmt.Errorf("--statements: %w", err)
		}
		if e.proxy, err = startCountingProxy(hostPort); err != nil {
			return err
		}
		dsn = viaProxy(e.dsn, e.proxy.addr())
	}
	for i := range n {
		name := fmt.Sprintf("bench-%d", i+1)
		var (
			in  benchInstance
			err error
		)
		if child || e.b.flags.procs {
			in, err = startChild(ctx, e.b, dsn, name)
		} else {
			in, err = startInProcess(ctx, e.b, dsn, name)
		}
		if err != nil {
			return fmt.Errorf("start instance %s: %w", name, err)
		}
		e.insts = append(e.insts, in)
	}
	return nil
}

// waitLeader waits until one of the instances leads.
func (e *benchEnv) waitLeader(ctx context.Context) error {
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		for _, in := range e.insts {
			if in.isLeader(ctx) {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("no instance became leader within 15s")
}

// inProcess is an instance wired like serve, in this process.
type inProcess struct {
	id     string
	addr   string
	db     *sql.DB
	rdb    *sql.DB // the reactor's pool: db, or an async-commit one
	r      *reactor.Reactor
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errs   chan error
}

func startInProcess(ctx context.Context, b *bencher, dsn, id string) (*inProcess, error) {
	db, err := sql.Open(ctx, dsn, id)
	if err != nil {
		return nil, err
	}
	rdb := db // the reactor's pool
	if b.flags.asyncCommit {
		// Claims, starts and completions need not wait for the WAL flush:
		// one lost in a server crash means the run is delivered again,
		// which at-least-once delivery allows. Runs are still created
		// (API) on a synchronous pool.
		if rdb, err = sql.Open(ctx, withParam(dsn, "synchronous_commit", "off"), id); err != nil {
			db.Close()
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		db.Close()
		return nil, err
	}
	bs := bus.New()
	lst := listeners.New(listeners.Config{DSN: dsn, Instance: id, ReconnectDelay: time.Second}, bs, b.log)
	r := reactor.New(reactor.Config{
		DSN: dsn, Instance: id, WorkerConcurrency: b.flags.concurrency, AllowPrivateTargets: true,
		ShutdownTimeout: 10 * time.Second,
	}, rdb, bs, b.log)
	api := chttp.NewServer(chttp.Config{Instance: id, AuthDisabled: true, TargetPolicy: chronos.TargetPolicy{AllowPrivate: true}}, db, bs, probe{lst, r}, b.log)
	hs := &nethttp.Server{Handler: api.Handler(), ReadHeaderTimeout: 10 * time.Second}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p := &inProcess{id: id, addr: "http://" + ln.Addr().String(), db: db, rdb: rdb, r: r, cancel: cancel, errs: make(chan error, 4)}
	run := func(name string, f func() error) {
		p.wg.Go(func() {
			if err := f(); err != nil && !errors.Is(err, nethttp.ErrServerClosed) {
				p.errs <- fmt.Errorf("%s: %w", name, err)
			}
		})
	}
	run("listener", func() error { return lst.Run(runCtx) })
	run("reactor", func() error { return r.Run(runCtx) })
	run("api", func() error { return api.Run(runCtx) })
	run("http", func() error { return hs.Serve(ln) })
	p.wg.Go(func() {
		<-runCtx.Done()
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		_ = hs.Shutdown(sctx)
	})
	deadline := time.Now().Add(15 * time.Second)
	for !lst.Connected() {
		if time.Now().After(deadline) {
			_ = p.stop()
			return nil, errors.New("listener not connected within 15s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return p, nil
}

func (p *inProcess) name() string                    { return p.id }
func (p *inProcess) url() string                     { return p.addr }
func (p *inProcess) pid() int                        { return os.Getpid() }
func (p *inProcess) isLeader(_ context.Context) bool { return p.r.IsLeader() }

func (p *inProcess) stop() error {
	p.cancel()
	p.wg.Wait()
	if p.rdb != p.db {
		p.rdb.Close()
	}
	p.db.Close()
	close(p.errs)
	var all []error
	for err := range p.errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// childProcess is an instance running `chronos serve` as a child process.
type childProcess struct {
	id     string
	addr   string
	cmd    *exec.Cmd
	done   chan struct{}
	stderr *syncBuffer
	client *nethttp.Client
}

// syncBuffer is a bytes.Buffer safe for the child's writer goroutine.
type syncBuffer struct {
	mu sync.Mutex
	bytes.Buffer
}

func (s *syncBuffer) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.TrimSpace(s.String())
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Buffer.Write(p)
}

// childBinary says whether path is a chronos binary that can run serve (a
// go test binary cannot).
func childBinary(path string) bool {
	return path != "" && !strings.HasSuffix(path, ".test")
}

func startChild(ctx context.Context, b *bencher, dsn, id string) (*childProcess, error) {
	if !childBinary(b.flags.binary) {
		return nil, fmt.Errorf("no chronos binary for child processes (%q): pass --binary", b.flags.binary)
	}
	// A free port: listen, note it, close. The child binds it at once.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(b.flags.binary, "serve")
	env := []string{}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !isServeVar(name) {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env,
		"DATABASE_URL="+dsn, "HTTP_ADDR="+addr, "INSTANCE_ID="+id, "AUTH_DISABLED=true",
		"ALLOW_PRIVATE_TARGETS=true", "MIGRATE_ON_START=false", "LOG_FORMAT=text",
		"LOG_LEVEL="+b.flags.logLevel, "WORKER_CONCURRENCY="+strconv.Itoa(b.flags.concurrency),
		"SHUTDOWN_TIMEOUT=10s")
	errBuf := &syncBuffer{}
	cmd.Stderr = errBuf
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", b.flags.binary, err)
	}
	c := &childProcess{id: id, addr: "http://" + addr, cmd: cmd, done: make(chan struct{}), stderr: errBuf,
		client: &nethttp.Client{Timeout: 3 * time.Second}}
	go func() {
		_ = cmd.Wait()
		close(c.done)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c.ready(ctx) {
			return c, nil
		}
		select {
		case <-c.done:
			return nil, fmt.Errorf("child exited: %s", errBuf.text())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = c.stop()
			return nil, errors.New("child not ready within 20s")
		}
	}
}

func isServeVar(name string) bool {
	for _, v := range serveVars {
		if v.name == name {
			return true
		}
	}
	return false
}

// readyz fetches the child's /readyz.
func (c *childProcess) readyz(ctx context.Context) (int, map[string]any) {
	req, err := nethttp.NewRequestWithContext(ctx, "GET", c.addr+"/readyz", nil)
	if err != nil {
		return 0, nil
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

func (c *childProcess) ready(ctx context.Context) bool {
	code, _ := c.readyz(ctx)
	return code == nethttp.StatusOK
}

func (c *childProcess) name() string { return c.id }
func (c *childProcess) url() string  { return c.addr }
func (c *childProcess) pid() int     { return c.cmd.Process.Pid }

func (c *childProcess) isLeader(ctx context.Context) bool {
	_, body := c.readyz(ctx)
	l, _ := body["leader"].(map[string]any)
	self, _ := l["self"].(bool)
	return self
}

func (c *childProcess) stop() error {
	defer c.client.CloseIdleConnections()
	select {
	case <-c.done:
		return nil
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
		return errors.New("did not stop within 30s of SIGTERM; killed")
	}
	if code := c.cmd.ProcessState.ExitCode(); code != 0 {
		return fmt.Errorf("exit code %d", code)
	}
	return nil
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

// --- statistics -----------------------------------------------------------

// percentiles of ds (nearest rank); ds is sorted in place.
type pct struct{ p50, p90, p99, max, min time.Duration }

func percentiles(ds []time.Duration) pct {
	if len(ds) == 0 {
		return pct{}
	}
	slices.Sort(ds)
	at := func(q float64) time.Duration {
		i := int(q*float64(len(ds))+0.999999) - 1
		return ds[min(max(i, 0), len(ds)-1)]
	}
	return pct{p50: at(0.50), p90: at(0.90), p99: at(0.99), max: ds[len(ds)-1], min: ds[0]}
}
