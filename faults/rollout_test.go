//go:build linux

package faults

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
	"github.com/jackc/pgx/v5"
)

// rolloutFrom is the previous release the rolling-upgrade test starts
// from: main just after migration 017 (chronos_compat, the schema's
// minimum level to lead) landed, before migration 018 raised that minimum
// (job_schedules). Its binary reads the minimum, so it is the oldest one
// the version protocol can keep from leading; releases before 017 are
// kept from materializing by 018's trigger instead (docs/upgrading.md).
// CHRONOS_ROLLOUT_FROM overrides it (a commit of this repository).
const rolloutFrom = "ad14bab58b2d98e5da0cfa499da70a55fe46313a"

// oldBinary builds cmd/chronos as of commit (git archive of this
// repository into a temporary tree, go build) and returns its path. The
// binary is cached in os.TempDir() by commit, so only the first run pays
// for the build. It fails, never skips, without git or the commit (a
// shallow clone): CI runs on a full clone of main.
func oldBinary(t testing.TB, commit string) string {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("the rolling-upgrade test builds the previous release from git history and needs git: %v", err)
	}
	root := ".." // the module root; the test runs in faults/
	if out, err := exec.Command(git, "-C", root, "rev-parse", "--is-shallow-repository").Output(); err != nil {
		t.Fatalf("the rolling-upgrade test needs a git checkout of chronos with its history (git rev-parse: %v)", err)
	} else if strings.TrimSpace(string(out)) == "true" {
		t.Fatalf("this is a shallow clone: the rolling-upgrade test builds the previous release (%s) from history; "+
			"run `git fetch --unshallow` (CI clones main in full)", commit)
	}
	if out, err := exec.Command(git, "-C", root, "rev-parse", "--verify", "--quiet", commit+"^{commit}").Output(); err != nil {
		t.Fatalf("commit %s (the previous release) is not in this clone's history: %v %s", commit, err, out)
	}
	dir := filepath.Join(os.TempDir(), "chronos-rollout-"+commit)
	bin := filepath.Join(dir, "chronos")
	if fileExists(bin) {
		return bin
	}
	start := time.Now()
	src, err := os.MkdirTemp("", "chronos-rollout-src-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(src)
	tarball := filepath.Join(src, "src.tar")
	if out, err := exec.Command(git, "-C", root, "archive", "--format=tar", "-o", tarball, commit).CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v %s", commit, err, out)
	}
	if out, err := exec.Command("tar", "-xf", tarball, "-C", src).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v %s", err, out)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := bin + fmt.Sprintf(".%d", os.Getpid())
	build := exec.Command(goTool(), "build", "-buildvcs=false", "-o", tmp,
		"-ldflags", "-X main.version=rollout-old-"+commit[:12], "./cmd/chronos")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the previous release (%s): %v\n%s", commit, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	t.Logf("built the previous release %s in %s", commit[:12], time.Since(start).Round(time.Second))
	return bin
}

// TestRollingUpgrade: the previous release and this one run together on
// one database, as a rolling update runs them (issue 23, item 1). The old
// instance migrates an empty database to its own schema and leads; under
// load (cron jobs every second with misfire all, with ends_at, with
// jitter_seconds; one-shots created all along; triggers) a new instance
// starts with MIGRATE_ON_START, so the new migrations land while the old
// one holds the leader's lock. Then both run, and the old one is stopped,
// as the Deployment's roll does. Checked:
//
//   - once the schema says the old binary is too old, it stops leading (at
//     its next ping) and never leads again; the new one leads. A release
//     the schema still allows to lead (CHRONOS_ROLLOUT_FROM the release
//     just before, when no migration since raised the minimum) leads on
//     until it is stopped, and then the new one leads;
//   - no policy is ignored: no run past ends_at, every run of the jittered
//     job fires at its occurrence plus the job's jitter, and is delivered
//     no earlier;
//   - nothing lost or doubled: one run per (job, scheduled_at); every second
//     of the misfire-all job between its first and last run has its run;
//     every acknowledged one-shot and trigger ran once and was delivered.
//
// A long fault test (it builds the previous release once, then runs
// about a minute): CHRONOS_LONG_TESTS=1, as .ci/run sets.
func TestRollingUpgrade(t *testing.T) {
	skipUnlessLong(t)
	from := rolloutFrom
	if v := os.Getenv("CHRONOS_ROLLOUT_FROM"); v != "" {
		from = v
	}
	old := oldBinary(t, from)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// The old release makes the database its own.
	dsn := sqltest.NewEmptyURL(t)
	mig := exec.Command(old, "migrate")
	mig.Env = []string{"PATH=" + os.Getenv("PATH"), "DATABASE_URL=" + dsn, "LOG_FORMAT=json"}
	if out, err := mig.CombinedOutput(); err != nil {
		t.Fatalf("old release's migrate: %v\n%s", err, out)
	}
	var oldLevel int
	c := emptyCluster(t, defaultClusterConfig(), dsn, newTarget()) // no proxy: addInstanceBin starts the instances
	if err := c.db.Pool.QueryRow(ctx, "SELECT version FROM chronos_schema_version").Scan(&oldLevel); err != nil {
		t.Fatal(err)
	}
	c.addInstanceBin(t, "old", old, nil)
	if who := c.waitLeader(t, 30*time.Second); who != "old" {
		t.Fatalf("leader %q, want old", who)
	}

	// The jobs, created on the old release.
	create := func(body map[string]any) chronos.Job {
		t.Helper()
		var j chronos.Job
		if code, err := c.api(ctx, http.MethodPost, "/v1/jobs", body, &j); err != nil || code != http.StatusCreated {
			t.Fatalf("create %v: HTTP %d, %v", body["name"], code, err)
		}
		return j
	}
	begin := time.Now()
	all := jobBody("every-second-all", c.target.srv.URL)
	all["cron_expr"] = "* * * * * *"
	all["misfire"] = "all"
	cronAll := create(all)
	ends := jobBody("ends-soon", c.target.srv.URL)
	ends["cron_expr"] = "* * * * * *"
	endsAt := begin.Add(25 * time.Second).Truncate(time.Second).UTC()
	ends["ends_at"] = endsAt.Format(time.RFC3339)
	cronEnds := create(ends)
	jit := jobBody("jittered", c.target.srv.URL)
	jit["cron_expr"] = "*/3 * * * * *"
	jit["jitter_seconds"] = 2
	cronJit := create(jit)
	manualBody := jobBody("manual", c.target.srv.URL)
	manualBody["cron_expr"] = "0 0 1 1 *"
	manual := create(manualBody)

	// Load: a trigger and a one-shot job (due 2 s later) every 200 ms.
	tr := &triggers{c: c}
	var (
		mu       sync.Mutex
		oneShots []int64
		shotFail int
	)
	stopLoad := background(ctx, func(loadCtx context.Context, i int) {
		tr.fire(loadCtx, manual.ID)
		b := jobBody(fmt.Sprintf("one-shot-%d", i), c.target.srv.URL)
		b["run_at"] = time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano)
		var j chronos.Job
		rctx, rcancel := context.WithTimeout(loadCtx, 5*time.Second)
		code, err := c.api(rctx, http.MethodPost, "/v1/jobs", b, &j)
		rcancel()
		mu.Lock()
		if err == nil && code == http.StatusCreated {
			oneShots = append(oneShots, j.ID)
		} else {
			shotFail++
		}
		mu.Unlock()
		select {
		case <-loadCtx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	})
	waitFor(t, 30*time.Second, "the old release to deliver a cron run", func() bool {
		return len(c.target.deliveries()) > 3
	})

	// The migration lands while the old release leads: the new release's
	// first instance migrates at start, as with MIGRATE_ON_START=true.
	var landed time.Time
	var landedOnce sync.Once
	watchCtx, stopWatch := context.WithCancel(ctx)
	var watch sync.WaitGroup
	watch.Add(1)
	go func() {
		defer watch.Done()
		for watchCtx.Err() == nil {
			var v int
			if err := c.db.Pool.QueryRow(watchCtx, "SELECT version FROM chronos_schema_version").Scan(&v); err == nil && v == sql.SchemaLevel() {
				landedOnce.Do(func() { landed = time.Now() })
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	if who, _ := c.leader(ctx); who != "old" {
		t.Fatalf("the old release does not lead as the migration starts (leader %q)", who)
	}
	migrateStart := time.Now()
	c.addInstanceBin(t, "new", "", []string{"MIGRATE_ON_START=true"})
	watch.Wait()
	stopWatch()
	if landed.IsZero() {
		t.Fatalf("the schema never reached level %d", sql.SchemaLevel())
	}
	t.Logf("migrations %d → %d applied in %s, under load, while the old release led",
		oldLevel, sql.SchemaLevel(), landed.Sub(migrateStart).Round(time.Millisecond))
	// A release the new schema still lets lead (the release just before,
	// when no migration since raised the minimum) keeps leading until the
	// roll stops it; one it does not must give way at its next ping.
	var minLead int
	if err := c.db.Pool.QueryRow(ctx, "SELECT min_lead_level FROM chronos_compat").Scan(&minLead); err != nil {
		t.Fatal(err)
	}
	raised := minLead > oldLevel
	newLeads := func() {
		waitFor(t, 20*time.Second, "the new release to lead", func() bool {
			who, err := c.leader(ctx)
			return err == nil && who == "new"
		})
	}
	if raised {
		newLeads()
	} else {
		t.Logf("the schema's minimum to lead is level %d: the old release (level %d) may go on leading until it is stopped", minLead, oldLevel)
	}
	newLedAt := time.Now()

	// Both run side by side; then the old one goes, as the roll ends.
	time.Sleep(12 * time.Second)
	oldStop := c.inst("old").term(t)
	if !raised {
		newLeads()
		newLedAt = time.Now()
	}
	time.Sleep(6 * time.Second)
	stopLoad()
	for _, j := range []chronos.Job{cronAll, cronEnds, cronJit} {
		c.pause(t, ctx, j.ID)
	}
	drain(t, c, 90*time.Second)

	// Leadership: the old release never led after its next ping once the
	// minimum was raised.
	for _, iv := range c.leaders.snapshot() {
		if iv.who != "old" || !raised {
			continue
		}
		if iv.start.After(landed) || iv.end.After(landed.Add(leaderSlack)) {
			t.Errorf("the old release led %s..%s; the migration raising the minimum landed at %s",
				iv.start.Format(time.StampMilli), iv.end.Format(time.StampMilli), landed.Format(time.StampMilli))
		}
	}

	// The runs.
	type run struct {
		id, job       int64
		scheduled     time.Time
		fire          *time.Time
		trigger       string
		status, maker string
	}
	runs := queryAll(t, ctx, c, "load runs", `
		SELECT r.id, r.job_id, r.scheduled_at, r.fire_at, r.trigger, r.status,
		       coalesce((SELECT a.worker_id FROM run_attempts_all a WHERE a.run_id = r.id ORDER BY a.attempt DESC LIMIT 1), '')
		  FROM job_runs r ORDER BY r.id`,
		func(rows pgx.Rows) (r run, err error) {
			return r, rows.Scan(&r.id, &r.job, &r.scheduled, &r.fire, &r.trigger, &r.status, &r.maker)
		})
	delivered := map[int64]time.Time{} // run -> first delivery
	for _, d := range c.target.deliveries() {
		if d.Aborted {
			continue
		}
		if at, ok := delivered[d.Run]; !ok || d.At.Before(at) {
			delivered[d.Run] = d.At
		}
	}
	byJob := map[int64][]run{}
	occurrence := map[string]int{}
	var oldDelivered, notSucceeded int
	for _, r := range runs {
		byJob[r.job] = append(byJob[r.job], r)
		if r.trigger == "schedule" {
			occurrence[fmt.Sprintf("%d@%s", r.job, r.scheduled.UTC().Format(time.RFC3339Nano))]++
		}
		if r.status != "succeeded" {
			notSucceeded++
			t.Errorf("run %d (job %d, %s, scheduled %s) ended %s", r.id, r.job, r.trigger, r.scheduled.Format(time.StampMilli), r.status)
		}
		if r.maker == "old" && delivered[r.id].After(landed) {
			oldDelivered++
		}
	}
	for k, n := range occurrence {
		if n > 1 {
			t.Errorf("occurrence %s has %d runs", k, n)
		}
	}
	// ends_at.
	for _, r := range byJob[cronEnds.ID] {
		if r.scheduled.After(endsAt) {
			t.Errorf("job ends-soon ran the occurrence %s, past its ends_at %s", r.scheduled.Format(time.StampMilli), endsAt.Format(time.StampMilli))
		}
	}
	if n := len(byJob[cronEnds.ID]); n == 0 {
		t.Error("job ends-soon never ran")
	}
	// jitter_seconds.
	jittered := 0
	for _, r := range byJob[cronJit.ID] {
		want := r.scheduled.Add(chronos.Jitter(cronJit.ID, r.scheduled, 2))
		if r.fire == nil || !r.fire.Equal(want) {
			t.Errorf("jittered run %d of %s fires at %v, want %s (the job's jitter)", r.id, r.scheduled.Format(time.StampMilli), r.fire, want.Format(time.StampMilli))
			continue
		}
		if at, ok := delivered[r.id]; ok && at.Before(want.Add(-50*time.Millisecond)) {
			t.Errorf("jittered run %d delivered at %s, before its fire time %s", r.id, at.Format(time.StampMilli), want.Format(time.StampMilli))
		}
		if want.After(r.scheduled) {
			jittered++
		}
	}
	if jittered == 0 {
		t.Errorf("no run of the jittered job was jittered (%d runs)", len(byJob[cronJit.ID]))
	}
	// misfire all: every second between the first and the last run.
	allRuns := byJob[cronAll.ID]
	if len(allRuns) < 10 {
		t.Fatalf("job every-second-all has %d runs", len(allRuns))
	}
	have := map[int64]bool{}
	first, last := allRuns[0].scheduled.Unix(), allRuns[0].scheduled.Unix()
	for _, r := range allRuns {
		s := r.scheduled.Unix()
		have[s] = true
		first, last = min(first, s), max(last, s)
	}
	missing := 0
	for s := first; s <= last; s++ {
		if !have[s] {
			missing++
			if missing <= 5 {
				t.Errorf("job every-second-all (misfire all) has no run for %s", time.Unix(s, 0).UTC().Format(time.TimeOnly))
			}
		}
	}
	// Acknowledged one-shots and triggers: each ran once, delivered.
	mu.Lock()
	shots := append([]int64(nil), oneShots...)
	mu.Unlock()
	for _, id := range shots {
		rs := byJob[id]
		if len(rs) != 1 {
			t.Errorf("one-shot job %d has %d runs, want 1", id, len(rs))
			continue
		}
		if _, ok := delivered[rs[0].id]; !ok {
			t.Errorf("one-shot job %d: run %d never delivered", id, rs[0].id)
		}
	}
	byID := map[int64]run{}
	for _, r := range runs {
		byID[r.id] = r
	}
	for _, id := range tr.acked() {
		if _, ok := byID[id]; !ok {
			t.Errorf("acknowledged trigger run %d lost", id)
		} else if _, ok := delivered[id]; !ok {
			t.Errorf("acknowledged trigger run %d never delivered", id)
		}
	}
	if errs := c.errorLines(); len(errs) > 0 {
		t.Logf("ERROR lines of the instances (%d), the first ones:\n%s", len(errs), strings.Join(lastN(errs, 10), "\n"))
	}
	t.Logf("rolling upgrade from %s (level %d) to level %d: new leader %s after the migration landed, old stopped %s after that; "+
		"%d runs (%d not succeeded), %d one-shots (%d creates failed), %d triggers acknowledged (%d failed), "+
		"%d runs delivered by the old release after the migration, %d of %d misfire-all seconds missing, %d jittered of %d",
		from[:12], oldLevel, sql.SchemaLevel(), newLedAt.Sub(landed).Round(time.Millisecond), oldStop.Sub(landed).Round(time.Millisecond),
		len(runs), notSucceeded, len(shots), shotFail, len(tr.acked()), tr.failed(), oldDelivered, missing, last-first+1,
		jittered, len(byJob[cronJit.ID]))
}

// addInstanceBin starts one more instance running bin ("": this tree's
// binary) with env on top of the defaults.
func (c *cluster) addInstanceBin(t testing.TB, id, bin string, env []string) *instance {
	t.Helper()
	in := &instance{id: id, c: c, bin: bin, env: append(instanceEnv(c.dsn, id, c.cfg), env...)}
	c.instsMu.Lock()
	c.insts = append(c.insts, in)
	c.instsMu.Unlock()
	in.start(t)
	return in
}
