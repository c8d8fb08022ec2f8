//go:build linux

package faults

import (
	"context"
	"flag"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chronoshq/chronos/sql"
)

// crashSyncCommit is REACTOR_SYNCHRONOUS_COMMIT for TestCrash's
// instances. Its default is serve's: `make test` proves what users get.
var crashSyncCommit = flag.String("crash.sync", "off",
	"TestCrash: REACTOR_SYNCHRONOUS_COMMIT of the instances: off (serve's default) or on")

// crashConfig sizes TestCrash.
type crashConfig struct {
	burst      int           // one-shot jobs due within a second of each other
	cronsAll   int           // every-second cron jobs with misfire "all": every occurrence must run
	cronsOne   int           // every-second cron jobs with misfire "one" (the default): a gap folds into one catch-up
	trigJobs   int           // jobs fired only by POST /trigger
	trigRate   int           // triggers per second, from before the burst until after the recovery
	createRate int           // one-shot jobs (due at once) created per second over the same time
	outage     time.Duration // how long the server stays down before its restart
	editJobs   int           // jobs PATCHed, paused and resumed through the crashes, one write at a time each
	doomed     int           // jobs deleted through the crashes
	redrives   int           // dead runs redriven through the crashes
	editEvery  time.Duration // mean time between two writes of each edit stream
}

func defaultCrashConfig() crashConfig {
	return crashConfig{
		burst:    pick(1000, 3000, 10000),
		cronsAll: 5, cronsOne: 5,
		trigJobs: 10, trigRate: 20, createRate: 10,
		outage:   pick(2*time.Second, 3*time.Second, 5*time.Second),
		editJobs: 3, doomed: 100, redrives: 30, editEvery: 400 * time.Millisecond,
	}
}

// TestCrash crashes the database under a busy cluster and checks that
// nothing the API acknowledged, no occurrence and no delivery is lost. It
// is the proof that REACTOR_SYNCHRONOUS_COMMIT=off, serve's default, may
// be (-crash.sync=off, the default here too), and a guard of what a
// database crash may cost.
//
// Two `chronos serve` instances run on a throwaway Postgres cluster of
// the test's own (fsync and synchronous_commit on, as in production)
// with every-second crons, a stream of API triggers and job creations,
// and a burst of one-shot jobs released at once. The server is killed
// (postmaster and children frozen and SIGKILLed at one instant: nothing
// in its memory survives, see pgServer.crash) twice: at the burst's first
// delivery, when the runs just materialized and claimed are the newest
// commits, and when half the burst is delivered. Each time it stays down
// for a few seconds and restarts (crash recovery); the instances, which
// must ride the outage out, reconnect. After everything settles it
// checks, against what the API acknowledged (recorded client side) and
// every request the target received:
//
//   - every job the API acknowledged (201) exists, and every trigger it
//     acknowledged (202) is a manual run of its job;
//   - every one-shot job has exactly one run, succeeded and delivered;
//   - no cron occurrence is lost: misfire "all" jobs have a run for every
//     second of the window, misfire "one" jobs a run for every second or
//     a catch-up run closing each gap (README, "Misfires");
//   - no lease outlives its expiry by more than a reaper interval (plus
//     slack) while a leader works, and nothing is leased at the end;
//   - delivery is at least once: every succeeded run was received;
//   - the run id is a sound deduplication key: every occurrence reached
//     the target under one run id, and a run id the target received names
//     the same occurrence in the database;
//   - every other write the API acknowledged survives, with its audit
//     entry: PATCHes, pauses and resumes (each job's final state is its
//     last acknowledged write's, or a later unanswered one's), deletes,
//     redrives, and the burst's bulk resumes (no job an acknowledged call
//     resumed is resumed again by a later call, which is how a lost
//     batch would hide behind the retries); an acknowledged
//     Idempotency-Key replays its first answer.
//
// With synchronous reactor commits a run is on disk before it is
// claimed, and its claim before its delivery, so neither a delivered run
// missing from the database nor an attempt number delivered twice can
// happen: both fail the test. With REACTOR_SYNCHRONOUS_COMMIT=off they
// are what a lost reactor commit looks like from outside, and the README
// allows exactly this much: an attempt delivered again only when its
// first delivery came in the crash's window (the last 1.5 s before it,
// or while the server was down: a claim whose commit the crash took),
// and a delivered run gone from the database only when it was a misfire
// "one" cron run delivered in that window and folded into a flagged
// catch-up. Anything beyond fails the test.
//
//	CHRONOS_LONG_TESTS=1 go test ./faults/ -run TestCrash -count=5 -v              # serve's default (off): the proof
//	CHRONOS_LONG_TESTS=1 go test ./faults/ -run TestCrash -v -args -crash.sync=on  # the reactor on the synchronous pool
func TestCrash(t *testing.T) {
	// A long run (a Postgres cluster of its own, killed twice under a
	// burst; a minute on a quiet machine, the heaviest fault test): CI
	// runs it, a plain make test does not.
	skipUnlessLong(t)
	mode := *crashSyncCommit
	if mode != "on" && mode != "off" {
		t.Fatalf("-crash.sync=%q: must be on or off", mode)
	}
	cc := defaultCrashConfig()
	t0 := time.Now()
	pg := newPGServer(t)
	dsn := pg.createDB(t, "chronos_crash")
	mctx, mcancel := context.WithTimeout(context.Background(), time.Minute)
	if err := sql.Migrate(mctx, dsn); err != nil {
		mcancel()
		t.Fatalf("migrate: %v", err)
	}
	mcancel()
	tg := newJobTarget()
	t.Cleanup(tg.close) // after the instances stop (cleanups run last first)

	cfg := defaultClusterConfig()
	cfg.instances = 2
	cfg.workerConcurrency = 32 // serve's default: the server is the test's own
	c := newDirectCluster(t, cfg, dsn, "REACTOR_SYNCHRONOUS_COMMIT="+mode)
	for _, in := range c.insts {
		logs := strings.Join(in.logs.lines(), "\n")
		if !strings.Contains(logs, `"reactor_synchronous_commit":"`+mode+`"`) || strings.Contains(logs, "keeps the reactor's sessions synchronous") {
			t.Fatalf("instance %s did not start with REACTOR_SYNCHRONOUS_COMMIT=%s in force:\n%s", in.id, mode, logs)
		}
	}
	t1 := time.Now()

	r := &crashRun{c: c, tg: tg, cfg: cc, acked: map[int64]ackedJob{}, fails: map[string]int{}, ed: &crashEdits{}}
	r.createJobs(t)
	r.createEditJobs(t)
	t2 := time.Now()
	m := startMonitor(c)
	defer m.stop()

	dctx, dcancel := context.WithCancel(context.Background())
	var drivers sync.WaitGroup
	drivers.Go(func() { every(dctx, cc.trigRate, r.triggerOne) })
	drivers.Go(func() { every(dctx, cc.createRate, r.createOne) })
	drivers.Go(func() { r.editLoop(dctx) })
	stopDrivers := func() { dcancel(); drivers.Wait() }
	defer stopDrivers()

	// Let the triggers and creations flow, then release the burst. The
	// server crashes twice: at the burst's first delivery, when the runs
	// just materialized, claimed and started are the reactor's newest
	// commits; and once half the burst is delivered, with claims and
	// completions in flight and resume calls perhaps retrying.
	r.waitAcked(t, 2*cc.trigRate, 30*time.Second)
	first, half := tg.arm("burst-", 1), tg.arm("burst-", cc.burst/2)
	r.burstAt = time.Now()
	// The release's own deadline: two outages, and on a loaded machine a
	// page of resumes takes seconds; past it the rest of the burst would
	// stay paused (see releaseDone).
	rctx, rcancel := context.WithTimeout(context.Background(), 300*time.Second)
	defer rcancel()
	var release sync.WaitGroup
	release.Go(func() { r.releaseBurst(rctx) })
	defer release.Wait()
	r.crashOn(t, pg, first, "the burst's first delivery")
	// No wait for the instances in between: they pick the burst up again
	// as soon as they reconnect, and the second crash must find it
	// under way.
	r.crashOn(t, pg, half, "half the burst delivered")
	for _, in := range c.insts {
		waitReadyz(t, c, in, 60*time.Second)
	}
	c.waitLeader(t, 30*time.Second)

	resumed := r.waitCronsCurrent(t, 30*time.Second)
	release.Wait() // every resume acknowledged
	r.releaseDone(t, rctx)
	time.Sleep(2 * time.Second) // normal service, so the schedule demonstrably carries on
	stopDrivers()
	windowEnd := r.disableCrons(t)
	r.waitOneShots(t, 60*time.Second)
	drain(t, c, 60*time.Second)
	m.stop()
	for _, in := range c.insts {
		if in.address() == "" || in.starts != 1 {
			t.Errorf("instance %s did not ride out the outage (serving %v, started %d times)", in.id, in.address() != "", in.starts)
		}
	}
	last := r.crashes[len(r.crashes)-1]
	t.Logf("REACTOR_SYNCHRONOUS_COMMIT=%s: cluster up in %s, %d jobs in %s; schedule current %s after the last restart; settled %s after the last crash",
		mode, t1.Sub(t0).Round(time.Millisecond), len(r.acked), t2.Sub(t1).Round(time.Millisecond),
		resumed.Round(time.Millisecond), time.Since(last.at).Round(time.Millisecond))
	for _, k := range r.crashes {
		t.Logf("crash at %s, on %s: %d of %d burst one-shots delivered; server down %s (crash to accepting connections); %s",
			k.at.Format("15:04:05.000"), k.on, k.burstDelivered, cc.burst, k.up.Sub(k.at).Round(time.Millisecond), k.wal)
	}
	r.check(t, m, windowEnd, mode == "on")
}

// crashRec is one crash of the server.
type crashRec struct {
	on             string // what it waited for
	at, up         time.Time
	burstDelivered int    // by the crash
	wal            string // what the WAL says was lost
}

// crashOn crashes the server the moment ready is closed, keeps it down
// for the outage and restarts it.
func (r *crashRun) crashOn(t *testing.T, pg *pgServer, ready <-chan struct{}, on string) {
	t.Helper()
	wal := startWALSampler(r.c.dsn)
	select {
	case <-ready:
	// Wide: after the first crash the instances reconnect to a server
	// fresh out of crash recovery (cold caches, fsync on) and pick the
	// burst up again; on a throttled machine that took over a minute.
	case <-time.After(150 * time.Second):
		wal.stop()
		r.c.dumpLogs(t, 40)
		r.dumpBackground(t, pg)
		t.Fatalf("waiting to crash on %s: not within 150 s (%d of %d burst one-shots delivered)", on, r.tg.count("burst-"), r.cfg.burst)
	}
	done := r.c.faults.begin("postgres crash", 0)
	k := crashRec{on: on, burstDelivered: r.tg.count("burst-")}
	k.at = pg.crash(t)
	lsn := wal.stop()        // the last sample before the crash: none can succeed after it
	time.Sleep(r.cfg.outage) // the outage itself: the server is down this long
	pg.start(t)
	k.up = time.Now()
	done()
	// Said at once, not only in the summary: should a later wait run out,
	// the log shows how long recovery took.
	t.Logf("postgres accepting connections again %s after the crash on %s", k.up.Sub(k.at).Round(time.Millisecond), on)
	k.wal = lostWAL(lsn, pg.logTail(200))
	r.mu.Lock()
	r.crashes = append(r.crashes, k)
	r.mu.Unlock()
}

// ackedJob is a job the API acknowledged with 201.
type ackedJob struct {
	name string
	at   time.Time // when the answer arrived
}

// crashRun is TestCrash in progress: its jobs and what the API
// acknowledged.
type crashRun struct {
	c   *cluster
	tg  *jobTarget
	cfg crashConfig

	burstAt        time.Time // when the burst was released
	crons, trigger []int64

	mu        sync.Mutex
	acked     map[int64]ackedJob // job id -> name
	triggered []triggerRec       // At: when the answer arrived
	fails     map[string]int     // requests not acknowledged, by reason
	live      int                // one-shots created by createOne so far
	crashes   []crashRec
	ed        *crashEdits
}

// waitReadyz waits until in answers /readyz with 200 (database reachable,
// listener connected), failing at once if the process is gone.
func waitReadyz(t *testing.T, c *cluster, in *instance, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if !in.running() || in.address() == "" {
			in.mu.Lock()
			err := in.exitErr
			in.mu.Unlock()
			c.dumpLogs(t, 40)
			t.Fatalf("instance %s exited during the outage: %v", in.id, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		resp, err := http.NewRequestWithContext(ctx, http.MethodGet, in.url("/readyz"), nil)
		var code int
		if err == nil {
			var res *http.Response
			if res, err = c.client.Do(resp); err == nil {
				code = res.StatusCode
				res.Body.Close()
			}
		}
		cancel()
		if code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			c.dumpLogs(t, 40)
			t.Fatalf("instance %s not ready %s after the restart (HTTP %d, %v)", in.id, within, code, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitCronsCurrent waits until every cron job has a run at or after now:
// the materializer has caught up after the outage.
func (r *crashRun) waitCronsCurrent(t *testing.T, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(within)
	for {
		var behind int
		err := r.c.db.Pool.QueryRow(context.Background(), `
			SELECT count(*) FROM unnest($1::bigint[]) AS j(id)
			 WHERE NOT EXISTS (SELECT 1 FROM job_runs r WHERE r.job_id = j.id AND r.scheduled_at >= now())`, r.crons).Scan(&behind)
		if err == nil && behind == 0 {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			r.c.dumpLogs(t, 60)
			t.Fatalf("%d cron jobs without a current run %s after the restart (err %v)", behind, within, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// disableCrons stops the cron jobs (in the database directly) and returns
// the database's clock then: the end of the schedule's window.
func (r *crashRun) disableCrons(t *testing.T) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var at time.Time
	if err := r.c.db.Pool.QueryRow(ctx, `UPDATE jobs SET enabled = false WHERE id = ANY($1) RETURNING now()`, r.crons).Scan(&at); err != nil {
		t.Fatalf("disable cron jobs: %v", err)
	}
	return at
}

// waitOneShots waits until every one-shot job in the database (burst and
// live, acknowledged or not) has a succeeded run.
func (r *crashRun) waitOneShots(t *testing.T, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var open int
		var detail string
		err := r.c.db.Pool.QueryRow(context.Background(), `
			SELECT count(*), coalesce(string_agg(name, ' ') FILTER (WHERE rn <= 10), '')
			  FROM (SELECT j.name, row_number() OVER (ORDER BY j.id) rn FROM jobs j
			         WHERE (j.name LIKE 'burst-%' OR j.name LIKE 'live-%')
			           AND NOT EXISTS (SELECT 1 FROM job_runs r WHERE r.job_id = j.id AND r.status = 'succeeded')) x`).Scan(&open, &detail)
		if err == nil && open == 0 {
			return
		}
		if time.Now().After(deadline) {
			r.c.dumpLogs(t, 40)
			t.Fatalf("%d one-shot jobs without a succeeded run %s after the crons stopped (err %v): %s", open, within, err, detail)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// newDirectCluster starts cfg.instances instances (a, b, ...) on dsn
// directly, without the fault suite's proxy (TestCrash breaks the server
// itself), each with the common environment plus extraEnv, and waits
// for a leader.
func newDirectCluster(t testing.TB, cfg clusterConfig, dsn string, extraEnv ...string) *cluster {
	t.Helper()
	c := emptyCluster(t, cfg, dsn, nil)
	c.startInstances(t, dsn, extraEnv...)
	return c
}

// dumpBackground logs what a stuck burst needs beyond the instances' last
// lines, which the API's request lines fill: each instance's last lines
// that are not about one request (the reactor, the leader, the pool), and
// the server's log (still in recovery? out of connections?).
func (r *crashRun) dumpBackground(t *testing.T, pg *pgServer) {
	t.Helper()
	for _, in := range r.c.insts {
		lines, ok := in.logLines()
		if !ok {
			continue
		}
		var bg []string
		for _, l := range lines {
			if !strings.Contains(l, `"request_id"`) && !strings.Contains(l, `"path":"/`) {
				bg = append(bg, l)
			}
		}
		t.Logf("--- instance %s, last 30 lines not about a request:\n%s", in.id, strings.Join(lastN(bg, 30), "\n"))
	}
	t.Logf("--- postgres log, last 30 lines:\n%s", pg.logTail(30))
}
