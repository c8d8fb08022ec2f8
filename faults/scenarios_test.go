package faults

import (
	"context"
	"sync"
	"testing"
	"time"
)

// scenario is one fault and what it is allowed to cause.
type scenario struct {
	name    string
	exp     expectations
	cluster func(*clusterConfig)
	work    func(*workloadConfig)
	window  time.Duration // how long the fault phase lasts (sets the one-shots' spread)
	fault   func(t *testing.T, s *scenarioRun)
	// long: run only where the long tests run (CHRONOS_LONG_TESTS=1, which
	// .ci/run sets; see TestFaults).
	long bool
}

// scenarioRun is a scenario in progress.
type scenarioRun struct {
	c     *cluster
	w     *workload
	m     *monitor
	start time.Time
	kills []killRec
}

// TestFaults runs each fault against a fresh three-instance cluster under
// the same 200-job workload and checks the invariants after it. The
// subtests run one after another, and so do the package's other tests:
// the machine has two cores, and a cluster under faults beside another
// test's cluster starved its leader (tried: a rolling restart beside
// another scenario left 164 schedule gaps, at make test's sizes too).
//
// A plain make test runs the scenarios of the guarantees every other
// test leans on: a leader killed, a worker killed mid-call, the database
// cut. The stall, the rolling restart and the trigger burst (each some
// 20 s of a loaded run, which kept make test past five minutes on two
// cores) run where the long tests run: in every CI run.
func TestFaults(t *testing.T) {
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) { runScenario(t, sc) })
	}
}

func scenarios() []scenario {
	return []scenario{
		{
			name:   "leader_kill",
			exp:    expectations{duplicates: true, gaps: true},
			window: pick(10*time.Second, 15*time.Second, 60*time.Second),
			fault:  leaderKills,
		},
		{
			name:   "worker_kill_in_flight",
			exp:    expectations{duplicates: true, gaps: true},
			window: pick(6*time.Second, 10*time.Second, 30*time.Second),
			fault:  workerKills,
		},
		{
			name: "db_cut",
			exp:  expectations{duplicates: true, gaps: true},
			// 10 s in every mode: longer than the lease, and as long as
			// the completer's statement timeout.
			window: pick(13*time.Second, 13*time.Second, 20*time.Second),
			fault: func(t *testing.T, s *scenarioRun) {
				dbFault(t, s, "cut", 10*time.Second, 0, s.c.proxy.Cut)
			},
		},
		{
			name:   "db_stall",
			long:   true,
			exp:    expectations{duplicates: true, gaps: true},
			window: pick(13*time.Second, 13*time.Second, 20*time.Second),
			fault: func(t *testing.T, s *scenarioRun) {
				// A statement caught in the stall keeps its row locks until
				// its client's timeout (the completer's is 10 s) gives up:
				// 10 s in every mode, so that the timeout fires.
				dbFault(t, s, "stall", 10*time.Second, 10*time.Second, s.c.proxy.Stall)
			},
		},
		{
			name:   "rolling_restart",
			long:   true,
			work:   func(w *workloadConfig) { w.rate = 30 },
			window: pick(8*time.Second, 10*time.Second, 40*time.Second),
			fault:  rollingRestart,
		},
		{
			name:   "trigger_burst",
			long:   true,
			window: pick(8*time.Second, 10*time.Second, 15*time.Second),
			fault: func(t *testing.T, s *scenarioRun) {
				triggerBurst(t, s, pick(1000, 2000, 5000))
			},
		},
	}
}

func runScenario(t *testing.T, sc scenario) {
	if sc.long {
		skipUnlessLong(t)
	}
	cfg := defaultClusterConfig()
	if sc.cluster != nil {
		sc.cluster(&cfg)
	}
	t0 := time.Now()
	c := newCluster(t, cfg)
	t1 := time.Now()
	wcfg := defaultWorkload(sc.window)
	if sc.work != nil {
		sc.work(&wcfg)
	}
	w := newWorkload(t, c, wcfg)
	t2 := time.Now()
	m := startMonitor(c)
	defer m.stop()
	s := &scenarioRun{c: c, w: w, m: m, start: time.Now()}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); w.drive(ctx) }()
	stopDrive := func() { cancel(); wg.Wait() }
	defer stopDrive()

	sc.fault(t, s)
	if t.Failed() {
		c.dumpLogs(t, 40)
		return
	}

	// Recovery: every instance up, a leader, and a few seconds of normal
	// service so the schedule demonstrably carries on.
	for _, in := range c.insts {
		if !in.running() {
			in.start(t)
		}
	}
	c.waitLeader(t, 20*time.Second)
	resumed := waitSchedule(t, c, w, 30*time.Second)
	time.Sleep(2 * time.Second)
	stopDrive()
	windowEnd := w.disableCrons(t)
	t3 := time.Now()
	drain(t, c, 60*time.Second)
	m.stop()
	t.Logf("scenario %s: cluster up in %s, 200 jobs in %s, %s of faults and recovery (schedule current again %s after the faults), drained in %s; %d kills; proxy %+v",
		sc.name, t1.Sub(t0).Round(time.Millisecond), t2.Sub(t1).Round(time.Millisecond), t3.Sub(t2).Round(time.Second),
		resumed.Round(time.Millisecond), time.Since(t3).Round(time.Millisecond), len(s.kills), c.proxy.Stats())
	check(t, c, w, m, s.kills, windowEnd, sc.exp)
}

// waitSchedule waits until every cron job has a run scheduled at or after
// now (the materializer has caught up after the faults) and returns how
// long that took.
func waitSchedule(t *testing.T, c *cluster, w *workload, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(within)
	for {
		var behind int
		err := c.db.Pool.QueryRow(context.Background(), `
			SELECT count(*) FROM unnest($1::bigint[]) AS j(id)
			 WHERE NOT EXISTS (SELECT 1 FROM job_runs r WHERE r.job_id = j.id AND r.scheduled_at >= now())`, w.crons).Scan(&behind)
		if err == nil && behind == 0 {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			c.dumpLogs(t, 60)
			t.Fatalf("%d cron jobs still without a current run %s after the faults ended (err %v)", behind, within, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sleepUntil sleeps until at (or returns at once when it is past).
func sleepUntil(at time.Time) {
	if d := time.Until(at); d > 0 {
		time.Sleep(d)
	}
}

// waitNewLeader waits until someone other than old holds the lock.
func waitNewLeader(t *testing.T, c *cluster, old string, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		name, err := c.leader(context.Background())
		if err == nil && name != "" && name != old {
			return name
		}
		if time.Now().After(deadline) {
			c.dumpLogs(t, 30)
			t.Fatalf("no new leader within %s of losing %s (now %q, err %v)", within, old, name, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// leaderKills kills the leader with SIGKILL every few seconds, restarting
// it once somebody else leads (so the failover measured is another
// instance taking over, not the victim coming back).
func leaderKills(t *testing.T, s *scenarioRun) {
	end := s.start.Add(s.w.cfg.window)
	for time.Now().Add(3 * time.Second).Before(end) {
		sleepUntil(time.Now().Add(3 * time.Second))
		leader := s.c.waitLeader(t, 20*time.Second)
		in := s.c.inst(leader)
		at := in.kill(t)
		s.kills = append(s.kills, killRec{who: leader, at: at, wasLeader: true, signal: "SIGKILL"})
		waitNewLeader(t, s.c, leader, 15*time.Second)
		in.start(t)
	}
	sleepUntil(end)
}

// workerKills holds the target's requests open until calls are in flight
// on every instance, kills the busiest follower with SIGKILL, then lets
// the target answer: the victim's runs must be reclaimed after their
// lease and delivered again elsewhere.
func workerKills(t *testing.T, s *scenarioRun) {
	end := s.start.Add(s.w.cfg.window)
	rounds := pick(1, 2, 5)
	for i := range rounds {
		sleepUntil(time.Now().Add(2 * time.Second))
		s.c.target.holdRequests()
		victim := busiestWorker(t, s, 15*time.Second)
		in := s.c.inst(victim)
		leader, _ := s.c.leader(context.Background())
		at := in.kill(t)
		s.kills = append(s.kills, killRec{who: victim, at: at, wasLeader: leader == victim, signal: "SIGKILL"})
		// The other instances' calls stay held a moment longer: their
		// leases must survive it (renewed while in flight).
		time.Sleep(s.c.cfg.lease)
		s.c.target.release()
		if leader == victim {
			waitNewLeader(t, s.c, victim, 15*time.Second)
		}
		in.start(t)
		t.Logf("round %d: killed %s with calls in flight (leader %v)", i+1, victim, leader == victim)
	}
	sleepUntil(end)
}

// busiestWorker waits for calls in flight and returns the instance
// holding the most leased or running runs, preferring a follower.
func busiestWorker(t *testing.T, s *scenarioRun, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		rows, err := s.c.db.Pool.Query(context.Background(), `
			SELECT leased_by, count(*) FROM job_runs WHERE status = 'running' GROUP BY leased_by ORDER BY count(*) DESC`)
		if err != nil {
			t.Fatalf("busiest worker: %v", err)
		}
		leader, _ := s.c.leader(context.Background())
		best, bestN, any := "", 0, ""
		for rows.Next() {
			var who string
			var n int
			if err := rows.Scan(&who, &n); err != nil {
				t.Fatal(err)
			}
			if any == "" && n >= 3 {
				any = who
			}
			if who != leader && n > bestN && n >= 3 {
				best, bestN = who, n
			}
		}
		rows.Close()
		if best == "" {
			best = any
		}
		if best != "" {
			return best
		}
		if time.Now().After(deadline) {
			t.Fatalf("no instance had calls in flight within %s (target in flight %d)", within, s.c.target.inflight.Load())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// dbFault breaks the database path (cut or stall) for d, mid-window.
func dbFault(t *testing.T, s *scenarioRun, what string, d, aftermath time.Duration, apply func()) {
	end := s.start.Add(s.w.cfg.window)
	sleepUntil(time.Now().Add(2 * time.Second))
	leader, _ := s.c.leader(context.Background())
	done := s.c.faults.begin(what, aftermath)
	apply()
	time.Sleep(d)
	s.c.proxy.Restore()
	done()
	t.Logf("database %s for %s (leader before: %s)", what, d, leader)
	sleepUntil(end)
}

// rollingRestart stops each instance with SIGTERM in turn, under load,
// and starts it again before the next.
func rollingRestart(t *testing.T, s *scenarioRun) {
	end := s.start.Add(s.w.cfg.window)
	rounds := pick(1, 1, 3)
	for range rounds {
		for _, in := range s.c.insts {
			sleepUntil(time.Now().Add(2 * time.Second))
			leader, _ := s.c.leader(context.Background())
			at := in.term(t)
			s.kills = append(s.kills, killRec{who: in.id, at: at, wasLeader: leader == in.id, signal: "SIGTERM"})
			in.start(t)
		}
	}
	sleepUntil(end)
}

// triggerBurst fires n triggers at once across the instances and reports
// how long the cluster took to deliver them.
func triggerBurst(t *testing.T, s *scenarioRun, n int) {
	end := s.start.Add(s.w.cfg.window)
	sleepUntil(time.Now().Add(2 * time.Second))
	before := len(s.c.target.deliveries())
	start := time.Now()
	s.w.burst(context.Background(), n, 48)
	sent := time.Since(start)
	deadline := time.Now().Add(90 * time.Second)
	for len(s.c.target.deliveries())-before < n && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("burst of %d triggers: accepted in %s, %d deliveries (all traffic) within %s of the first",
		n, sent.Round(time.Millisecond), len(s.c.target.deliveries())-before, time.Since(start).Round(time.Millisecond))
	sleepUntil(end)
}
