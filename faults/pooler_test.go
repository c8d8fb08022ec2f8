package faults

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// newClusterWith starts instances named ids on a fresh cluster whose
// instances get env(id) on top of instanceEnv(dsn...): no proxy between
// them and the database.
func newClusterWith(t testing.TB, cfg clusterConfig, dsn string, env func(id string) []string, ids ...string) *cluster {
	t.Helper()
	c := emptyCluster(t, cfg, dsn, newTarget())
	for _, id := range ids {
		c.addInstance(t, id, env(id))
	}
	c.waitLeader(t, 20*time.Second)
	return c
}

// addInstance starts one more instance with env on top of the defaults.
func (c *cluster) addInstance(t testing.TB, id string, env []string) *instance {
	t.Helper()
	in := &instance{id: id, c: c, env: append(instanceEnv(c.dsn, id, c.cfg), env...)}
	c.instsMu.Lock()
	c.insts = append(c.insts, in)
	c.instsMu.Unlock()
	in.start(t)
	return in
}

// TestPgBouncerTransactionMode: with DATABASE_URL through PgBouncer in
// transaction pooling mode (stock settings otherwise) and
// DATABASE_DIRECT_URL to Postgres itself, two instances create jobs with
// labels and headers, trigger runs and fire a cron job every second, while
// the leader is stopped with SIGTERM and then killed with kill -9: a new
// leader within 2 s each time, /readyz never names an instance that does
// not lead, nothing acknowledged is lost and no occurrence goes missing.
// Trigger-to-delivery latency through the pooler and direct is reported.
func TestPgBouncerTransactionMode(t *testing.T) {
	begin := time.Now()
	dsn := sqltest.NewURL(t)
	pooled := startPgbouncer(t, dsn)
	cfg := defaultClusterConfig()
	cfg.instances = 2
	cfg.idlePoll = 10 * time.Second // wake-ups come from LISTEN/NOTIFY, not the poll
	pooledEnv := func(string) []string {
		return []string{"DATABASE_URL=" + pooled, "DATABASE_DIRECT_URL=" + dsn}
	}
	// Without DATABASE_DIRECT_URL, an instance on the pooler refuses to
	// start, and says what to set.
	bad := exec.Command(chronosBinary(t), "serve")
	bad.Env = append(instanceEnv(pooled, "lost", cfg), "DATABASE_URL="+pooled)
	out, err := bad.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "set DATABASE_DIRECT_URL to Postgres itself") {
		t.Errorf("serve on the pooler without DATABASE_DIRECT_URL: %v\n%s", err, out)
	}
	c := newClusterWith(t, cfg, dsn, pooledEnv, "a", "b")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// Creates with labels and headers (map arguments), through the pooler.
	create := func(name string, extra map[string]any) int64 {
		t.Helper()
		body := jobBody(name, c.target.srv.URL)
		body["headers"] = map[string]string{"X-Env": "prod", "X-Team": "ops"}
		body["labels"] = map[string]string{"team": "ops", "tier": name}
		for k, v := range extra {
			body[k] = v
		}
		var j chronos.Job
		if code, err := c.api(ctx, http.MethodPost, "/v1/jobs", body, &j); err != nil || code != http.StatusCreated {
			c.dumpLogs(t, 20)
			t.Fatalf("create %s: HTTP %d, %v", name, code, err)
		}
		return j.ID
	}
	cronJob := create("every-second", map[string]any{"cron_expr": "* * * * * *"})
	var manual []int64
	for i := range 4 {
		manual = append(manual, create(fmt.Sprintf("manual-%d", i), map[string]any{"cron_expr": "0 0 1 1 *"}))
	}
	var listed struct {
		Jobs []chronos.Job `json:"jobs"`
	}
	if code, err := c.api(ctx, http.MethodGet, "/v1/jobs?label=team%3Dops", nil, &listed); err != nil || code != http.StatusOK || len(listed.Jobs) != 5 {
		t.Fatalf("list by label: HTTP %d, %v, %d jobs (want 5)", code, err, len(listed.Jobs))
	}

	t.Logf("cluster up, jobs created at %s", time.Since(begin).Round(time.Millisecond))
	tr := &triggers{c: c}
	pooledLatency := tr.measure(t, ctx, manual, 30)

	// Triggers keep coming through the faults.
	stopLoad := tr.keepFiring(ctx, manual)

	for _, fault := range []string{"SIGTERM", "kill -9"} {
		old := c.waitLeader(t, 10*time.Second)
		checkReadyzLeader(t, c, old)
		in := c.inst(old)
		var at time.Time
		if fault == "SIGTERM" {
			at = in.term(t)
		} else {
			at = in.kill(t)
		}
		next := waitNewLeader(t, c, old, 10*time.Second)
		took := time.Since(at)
		t.Logf("%s of leader %s: %s leads %s after the signal", fault, old, next, took.Round(time.Millisecond))
		if took > 2*time.Second {
			t.Errorf("%s of leader %s: new leader %s after %s, want within 2s", fault, old, next, took)
		}
		checkReadyzLeader(t, c, next)
		in.start(t)
		time.Sleep(3 * time.Second) // load, and cron, with both up again
	}
	stopLoad()
	cronStop := time.Now()
	c.pause(t, ctx, cronJob)
	drain(t, c, 30*time.Second)

	// /readyz names both instances with their versions.
	var r struct {
		Version   string `json:"version"`
		Instances []struct {
			Instance string `json:"instance"`
			Version  string `json:"version"`
			Leader   bool   `json:"leader"`
		} `json:"instances"`
	}
	if code, err := c.apiOn(ctx, c.inst("a"), http.MethodGet, "/readyz", nil, &r); err != nil || code != http.StatusOK {
		t.Fatalf("readyz: HTTP %d, %v", code, err)
	}
	if len(r.Instances) != 2 || r.Instances[0].Version == "" || r.Instances[0].Version != r.Version {
		t.Errorf("readyz instances %+v, want a and b with version %q", r.Instances, r.Version)
	}

	// Nothing acknowledged is lost: every triggered run succeeded and was
	// delivered; every cron occurrence has its run (or a flagged catch-up).
	runs := loadRuns(t, ctx, c)
	byID, _ := indexRuns(runs)
	delivered := c.target.deliveredRuns()
	acked := tr.acked()
	for _, id := range acked {
		r := byID[id]
		switch {
		case r == nil:
			t.Errorf("triggered run %d (acknowledged) is not in the database", id)
		case r.Status != "succeeded" || !delivered[id]:
			t.Errorf("triggered run %d: status %s, delivered %v", id, r.Status, delivered[id])
		}
	}
	var cronRuns []*dbRun
	for _, r := range runs {
		if r.Job == cronJob && r.Trigger == "schedule" {
			cronRuns = append(cronRuns, r)
			if r.Status != "succeeded" || !delivered[r.ID] {
				t.Errorf("cron run %d (%s): status %s, delivered %v", r.ID, r.ScheduledAt.Format(time.RFC3339), r.Status, delivered[r.ID])
			}
		}
	}
	sort.Slice(cronRuns, func(i, j int) bool { return cronRuns[i].ScheduledAt.Before(cronRuns[j].ScheduledAt) })
	for i := 1; i < len(cronRuns); i++ {
		if gap := cronRuns[i].ScheduledAt.Sub(cronRuns[i-1].ScheduledAt); gap > time.Second && !cronRuns[i].CatchUp {
			t.Errorf("cron occurrences between %s and %s have no run and no catch-up",
				cronRuns[i-1].ScheduledAt.Format(time.RFC3339), cronRuns[i].ScheduledAt.Format(time.RFC3339))
		}
	}
	if len(cronRuns) < int(cronStop.Sub(cronRuns[0].ScheduledAt).Seconds())/2 {
		t.Errorf("only %d cron runs in %s", len(cronRuns), cronStop.Sub(cronRuns[0].ScheduledAt))
	}
	if errs := c.errorLines(); len(errs) > 0 {
		t.Errorf("instances logged errors:\n%s", strings.Join(errs, "\n"))
	}
	t.Logf("%d triggers acknowledged and delivered, %d cron runs, %d trigger failures %v", len(acked), len(cronRuns), tr.failed(), tr.failures())
	for why := range tr.failures() {
		if strings.HasPrefix(why, "HTTP 5") {
			t.Errorf("a trigger failed with a server error: %s", why)
		}
	}
	t.Logf("checked at %s", time.Since(begin).Round(time.Millisecond))

	// The same triggers on one instance straight on Postgres.
	for _, in := range c.insts {
		if in.running() {
			in.term(t)
		}
	}
	t.Logf("stopped at %s", time.Since(begin).Round(time.Millisecond))
	c.addInstance(t, "direct", nil)
	c.waitLeader(t, 10*time.Second)
	directLatency := tr.measure(t, ctx, manual, 30)
	t.Logf("trigger to delivery, 30 sequential triggers: through PgBouncer p50 %s max %s; direct p50 %s max %s (ratio of p50 %.2f)",
		pct(pooledLatency, 0.5), pooledLatency[len(pooledLatency)-1], pct(directLatency, 0.5), directLatency[len(directLatency)-1],
		float64(pct(pooledLatency, 0.5))/float64(pct(directLatency, 0.5)))
}

// checkReadyzLeader: every live instance's /readyz names who (or, right
// at a handover, nobody yet), and who's own says it leads.
func checkReadyzLeader(t *testing.T, c *cluster, who string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	deadline := time.Now().Add(2 * time.Second)
	for _, in := range c.live() {
		for {
			r, err := in.readyz(ctx)
			if err == nil && r.Leader.Instance == who && (in.id != who || r.Leader.Self) {
				break
			}
			if err == nil && r.Leader.Instance != "" && r.Leader.Instance != who {
				name, _ := c.leader(ctx)
				if name == r.Leader.Instance {
					break // the lock moved on meanwhile: the answer is right
				}
			}
			if time.Now().After(deadline) {
				t.Errorf("%s's /readyz names leader %q (self %v, err %v), want %q", in.id, r.Leader.Instance, r.Leader.Self, err, who)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// triggers fires manual runs and records the acknowledged ones.
type triggers struct {
	c     *cluster
	mu    sync.Mutex
	ids   []int64
	last  time.Time // when the last acknowledged trigger was sent
	fails int
	why   map[string]int // failures by reason
}

// lastAt is when the last acknowledged trigger was sent.
func (tr *triggers) lastAt() time.Time {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.last
}

// fire triggers job once; a 202 is an acknowledged run.
func (tr *triggers) fire(ctx context.Context, job int64) (int64, time.Time, bool) {
	r, at, code, err := tr.c.trigger(ctx, job)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if err != nil || code != http.StatusAccepted {
		tr.fails++
		if tr.why == nil {
			tr.why = map[string]int{}
		}
		var se *serverError
		switch {
		case errors.As(err, &se):
			tr.why[fmt.Sprintf("HTTP %d: %.200s", se.code, se.body)]++
		case err != nil:
			tr.why["no answer: "+err.Error()]++
		default:
			tr.why[fmt.Sprintf("HTTP %d", code)]++
		}
		return 0, at, false
	}
	tr.ids = append(tr.ids, r.ID)
	tr.last = at
	return r.ID, at, true
}

// keepFiring triggers jobs in turn, one every 50 ms, in the background
// until the stop it returns is called.
func (tr *triggers) keepFiring(ctx context.Context, jobs []int64) (stop func()) {
	return background(ctx, func(ctx context.Context, i int) {
		tr.fire(ctx, jobs[i%len(jobs)])
		time.Sleep(50 * time.Millisecond)
	})
}

func (tr *triggers) acked() []int64 {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.ids)
}

func (tr *triggers) failed() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.fails
}

// failures lists the failures by reason.
func (tr *triggers) failures() map[string]int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return maps.Clone(tr.why)
}

// measure fires n triggers one after the other and returns each one's
// time from the request to the target receiving it, sorted.
func (tr *triggers) measure(t *testing.T, ctx context.Context, jobs []int64, n int) []time.Duration {
	t.Helper()
	var out []time.Duration
	for i := range n {
		id, at, ok := tr.fire(ctx, jobs[i%len(jobs)])
		if !ok {
			t.Fatalf("trigger %d failed", i)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			var got time.Time
			for _, d := range tr.c.target.deliveries() {
				if d.Run == id {
					got = d.At
					break
				}
			}
			if !got.IsZero() {
				out = append(out, got.Sub(at))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("triggered run %d not delivered within 10 s", id)
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
	slices.Sort(out)
	return out
}
