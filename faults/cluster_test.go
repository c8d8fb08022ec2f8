package faults

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/internal/pgdsn"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

const apiKey = "faults-key-0123456789"

// clusterConfig is what every instance of a cluster is started with.
type clusterConfig struct {
	instances int
	// workerConcurrency is kept low: each instance's pool grows with its
	// workers (up to 16 connections; pool_max_conns cannot be set, see
	// the report), and the shared server has 100 for every test.
	workerConcurrency int
	idlePoll          time.Duration
	lease             time.Duration
	leaderPoll        time.Duration
	reaper            time.Duration
	shutdownTimeout   time.Duration
}

func defaultClusterConfig() clusterConfig {
	return clusterConfig{
		instances:         3,
		workerConcurrency: 8,
		idlePoll:          3 * time.Second,
		lease:             3 * time.Second,
		leaderPoll:        time.Second,
		reaper:            500 * time.Millisecond,
		shutdownTimeout:   5 * time.Second,
	}
}

// cluster is a set of chronos processes on one fresh database, reached
// through a proxy, all calling one recording target.
type cluster struct {
	t      testing.TB
	cfg    clusterConfig
	dsn    string // direct, for the checker
	proxy  *sqltest.Proxy
	db     *sql.DB // direct pool: sees through every fault
	target *target
	client *http.Client
	insts  []*instance
	// instsMu guards insts where an instance is added while other
	// goroutines pick live ones (the rolling upgrade adds the new release
	// under load); the setup's own loops run before any such goroutine.
	instsMu sync.Mutex

	leaders *leaderLog
	faults  *faultLog
}

// newCluster starts cfg.instances instances (ids a, b, c...) and waits
// until each serves HTTP and one of them leads.
func newCluster(t testing.TB, cfg clusterConfig) *cluster {
	t.Helper()
	return newClusterOn(t, cfg, sqltest.NewURL(t))
}

// newClusterOn is newCluster on a given, migrated, database.
func newClusterOn(t testing.TB, cfg clusterConfig, dsn string) *cluster {
	t.Helper()
	proxy, proxied := sqltest.NewProxyFor(t, dsn)
	c := emptyCluster(t, cfg, dsn, newTarget())
	c.proxy = proxy
	c.startInstances(t, proxied)
	return c
}

// emptyCluster is a cluster on dsn with no instance yet: the checker's
// pool, the API client, the logs and tg (nil: no target), closed at
// cleanup after the instances added to it are stopped.
func emptyCluster(t testing.TB, cfg clusterConfig, dsn string, tg *target) *cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := sql.Open(ctx, pgdsn.WithParam(dsn, "pool_max_conns", "4"), "faults-checker")
	if err != nil {
		t.Fatalf("open checker pool: %v", err)
	}
	c := &cluster{
		t: t, cfg: cfg, dsn: dsn, db: db, target: tg,
		client:  &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 256}},
		leaders: &leaderLog{open: map[string]time.Time{}},
		faults:  &faultLog{},
	}
	t.Cleanup(func() {
		// Side by side: each waits for its process's graceful stop.
		var wg sync.WaitGroup
		for _, in := range c.insts {
			wg.Go(in.stopQuietly)
		}
		wg.Wait()
		if c.target != nil {
			c.target.close()
		}
		c.client.CloseIdleConnections()
		db.Close()
	})
	return c
}

// startInstances starts cfg.instances instances (ids a, b, c...) on dsn,
// each with the common environment plus extraEnv, and waits until each
// serves HTTP and one of them leads.
func (c *cluster) startInstances(t testing.TB, dsn string, extraEnv ...string) {
	t.Helper()
	for i := range c.cfg.instances {
		id := string(rune('a' + i))
		env := append(instanceEnv(dsn, id, c.cfg), extraEnv...)
		c.insts = append(c.insts, &instance{id: id, c: c, env: env})
	}
	up := make([]launching, len(c.insts))
	for i, in := range c.insts {
		up[i] = in.launch(t)
	}
	for i, in := range c.insts {
		in.awaitUp(t, up[i])
	}
	c.waitLeader(t, 20*time.Second)
}

func instanceEnv(dsn, id string, cfg clusterConfig) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"DATABASE_URL=" + dsn,
		"DATABASE_CONNECT_TIMEOUT=60s",
		"HTTP_ADDR=127.0.0.1:0",
		"INSTANCE_ID=" + id,
		"API_KEYS=" + apiKey,
		"RATE_LIMIT=0", // the load tests measure the cluster, not the per-key limiter
		"ALLOW_PRIVATE_TARGETS=true",
		"MIGRATE_ON_START=false",
		"LOG_LEVEL=" + cmp.Or(os.Getenv("FAULTS_LOG_LEVEL"), "info"), // debug with FAULTS_LOG_DIR: the whole story of a failure
		"LOG_FORMAT=json",
		fmt.Sprintf("WORKER_CONCURRENCY=%d", cfg.workerConcurrency),
		"IDLE_POLL_INTERVAL=" + cfg.idlePoll.String(),
		"LEASE_DURATION=" + cfg.lease.String(),
		"LEADER_POLL_INTERVAL=" + cfg.leaderPoll.String(),
		"REAPER_INTERVAL=" + cfg.reaper.String(),
		"SHUTDOWN_TIMEOUT=" + cfg.shutdownTimeout.String(),
		// Targets fail on purpose here, and the model checks what their
		// retries do: the host breaker (issue 24) is off.
		"HOST_BREAKER_FAILURES=0",
	}
	if raceInstances() {
		// Report a race and keep going: the suite reads the report.
		env = append(env, "GORACE=halt_on_error=0")
	}
	return env
}

func (c *cluster) inst(id string) *instance {
	for _, in := range c.insts {
		if in.id == id {
			return in
		}
	}
	return nil
}

// leader asks the database who holds the leadership lock ("" for nobody).
func (c *cluster) leader(ctx context.Context) (string, error) {
	return c.db.Leader(ctx)
}

// waitLeader waits until some instance holds the lock and returns it.
func (c *cluster) waitLeader(t testing.TB, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		name, err := c.leader(context.Background())
		if err == nil && name != "" {
			return name
		}
		if time.Now().After(deadline) {
			c.dumpLogs(t, 30)
			t.Fatalf("no leader within %s (last error %v)", within, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// live returns the running instances, in a random order.
func (c *cluster) live() []*instance {
	c.instsMu.Lock()
	insts := slices.Clone(c.insts)
	c.instsMu.Unlock()
	var out []*instance
	for _, in := range insts {
		if in.address() != "" {
			out = append(out, in)
		}
	}
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// pause disables job through the API, failing t if it cannot.
func (c *cluster) pause(t testing.TB, ctx context.Context, job int64) {
	t.Helper()
	if code, err := c.api(ctx, http.MethodPatch, fmt.Sprintf("/v1/jobs/%d", job), map[string]any{"enabled": false}, nil); err != nil || code != http.StatusOK {
		t.Fatalf("pause job %d: HTTP %d, %v", job, code, err)
	}
}

// trigger fires job through the API (5 s at most) and returns the run it
// was given, when the request was sent, and the answer.
func (c *cluster) trigger(ctx context.Context, job int64) (chronos.Run, time.Time, int, error) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	at := time.Now()
	var r chronos.Run
	code, err := c.api(rctx, http.MethodPost, fmt.Sprintf("/v1/jobs/%d/trigger", job), nil, &r)
	return r, at, code, err
}

// api sends a request to some live instance (trying the others when one
// is down) and decodes a JSON answer into out (when not nil). It returns
// the status code, or an error when no instance answered.
func (c *cluster) api(ctx context.Context, method, path string, body, out any) (int, error) {
	var lastErr error = fmt.Errorf("no live instance")
	for _, in := range c.live() {
		code, err := c.apiOn(ctx, in, method, path, body, out)
		if err == nil {
			return code, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return 0, lastErr
}

// apiOn sends a request to one instance.
func (c *cluster) apiOn(ctx context.Context, in *instance, method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, in.url(path), rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+apiKey)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("decode %s %s: %w: %s", method, path, err, b)
		}
	}
	if resp.StatusCode >= 500 {
		return resp.StatusCode, &serverError{code: resp.StatusCode, body: string(b)}
	}
	return resp.StatusCode, nil
}

type serverError struct {
	code int
	body string
}

func (e *serverError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.code, e.body) }

// dumpLogs writes the tail of every instance's log to the test log.
func (c *cluster) dumpLogs(t testing.TB, n int) {
	t.Helper()
	for _, in := range c.insts {
		if lines, ok := in.logLines(); ok {
			t.Logf("--- instance %s (start %d), last %d lines:\n%s", in.id, in.starts, n, strings.Join(lastN(lines, n), "\n"))
		}
	}
}

// errorLines returns the ERROR-level log lines of every instance's
// current process.
func (c *cluster) errorLines() []string {
	var out []string
	for _, in := range c.insts {
		in.mu.Lock()
		sink := in.logs
		in.mu.Unlock()
		if sink != nil {
			sink.mu.Lock()
			for _, l := range sink.errors {
				out = append(out, in.id+": "+l)
			}
			sink.mu.Unlock()
		}
	}
	return out
}

// leaderLog records, from the instances' logs, when each instance was
// doing leader work ("leader work starting" .. "leader work stopped", or
// its death).
type leaderLog struct {
	mu        sync.Mutex
	open      map[string]time.Time
	intervals []interval
}

type interval struct {
	who        string
	start, end time.Time
}

func (l *leaderLog) start(who string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.open[who]; !ok {
		l.open[who] = at
	}
}

func (l *leaderLog) stop(who string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.open[who]; ok {
		l.intervals = append(l.intervals, interval{who, s, at})
		delete(l.open, who)
	}
}

// snapshot returns the closed intervals plus the open ones (ending now).
func (l *leaderLog) snapshot() []interval {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := append([]interval(nil), l.intervals...)
	now := time.Now()
	for who, s := range l.open {
		out = append(out, interval{who, s, now})
	}
	return out
}

// faultLog records when the database was unreachable for the instances
// (a cut or a stall), so checks can tell a fault's effects from bugs.
type faultLog struct {
	mu      sync.Mutex
	windows []interval
}

// begin records the start of a fault; the returned func records its end,
// plus aftermath: how long its effects may outlast it (a stalled statement
// holds its row locks until its client's timeout gives up on it).
func (f *faultLog) begin(what string, aftermath time.Duration) (end func()) {
	f.mu.Lock()
	i := len(f.windows)
	f.windows = append(f.windows, interval{who: what, start: time.Now()})
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		f.windows[i].end = time.Now().Add(aftermath)
		f.mu.Unlock()
	}
}

func (f *faultLog) snapshot() []interval {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]interval(nil), f.windows...)
}
