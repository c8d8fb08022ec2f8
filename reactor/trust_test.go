package reactor

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// recorded is one delivery a recorder received.
type recorded struct {
	sched   time.Time
	at      time.Time
	catchUp bool
	run     string
}

// recorder is a target that records every delivery.
type recorder struct {
	*target
	mu   sync.Mutex
	got  []recorded
	hold time.Duration // how long each request takes
}

func newRecorder(t *testing.T, hold time.Duration) *recorder {
	rec := &recorder{hold: hold}
	rec.target = newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		d := recorded{at: time.Now(), catchUp: r.Header.Get(HeaderCatchUp) == "true", run: r.Header.Get(HeaderRunID)}
		d.sched, _ = time.Parse(time.RFC3339Nano, r.Header.Get(HeaderScheduledAt))
		rec.mu.Lock()
		rec.got = append(rec.got, d)
		rec.mu.Unlock()
		if rec.hold > 0 {
			select {
			case <-time.After(rec.hold):
			case <-r.Context().Done():
			}
		}
	})
	return rec
}

func (rec *recorder) deliveries() []recorded {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]recorded(nil), rec.got...)
}

// dbNow reads the database's clock.
func dbNow(t testing.TB, db *sql.DB) time.Time {
	t.Helper()
	var now time.Time
	if err := db.Pool.QueryRow(context.Background(), "SELECT now()").Scan(&now); err != nil {
		t.Fatal(err)
	}
	return now.UTC()
}

// waitDBTime waits until the database's clock passes at.
func waitDBTime(t testing.TB, db *sql.DB, at time.Time, within time.Duration) {
	t.Helper()
	eventually(t, within, "the database's clock to pass "+at.Format(time.RFC3339Nano), func() bool {
		return dbNow(t, db).After(at)
	})
}

// A leader whose own clock is off by five seconds, either way, loses and
// doubles no occurrence of a per-second job: what is due is decided by the
// database's clock (issue 11.2).
func TestSkewedLeaderKeepsEveryOccurrence(t *testing.T) {
	t.Parallel()
	for _, skew := range []time.Duration{5 * time.Second, -5 * time.Second} {
		t.Run(skew.String(), func(t *testing.T) {
			dsn := parallelDSN(t)
			rec := newRecorder(t, 0)
			in := startLeader(t, dsn, Config{ClockSkew: skew})
			expr := "* * * * * *"
			createJob(t, in.db, &chronos.Job{CronExpr: &expr, TargetURL: rec.URL})
			// The window starts after the first delivery: a loaded run
			// (20 in a row beside other packages) stalled the new leader
			// past the job's first occurrences, a real gap its catch-up
			// rightly closed, and not the skew's doing.
			eventually(t, 30*time.Second, "a first delivery", func() bool { return len(rec.deliveries()) > 0 })
			from := dbNow(t, in.db).Truncate(time.Second).Add(2 * time.Second)
			to := from.Add(3 * time.Second)
			waitDBTime(t, in.db, to, 20*time.Second)
			// A skewed instance may fire late by its skew (its timers), so
			// give the deliveries of the window time to arrive (20 s, then
			// 45 s, ran out in CI runs on a throttled machine).
			eventually(t, 90*time.Second, "every occurrence of the window delivered", func() bool {
				n := 0
				for _, d := range rec.deliveries() {
					if !d.sched.Before(from) && !d.sched.After(to) {
						n++
					}
				}
				return n >= 4
			})
			seen := map[time.Time]int{}
			for _, d := range rec.deliveries() {
				if d.catchUp && !d.sched.Before(from) {
					t.Errorf("catch-up recorded for %v: no gap happened", d.sched)
				}
				seen[d.sched.UTC()]++
			}
			for at := from; !at.After(to); at = at.Add(time.Second) {
				if seen[at] != 1 {
					t.Errorf("occurrence %v delivered %d times, want once", at.Format(time.TimeOnly), seen[at])
				}
			}
		})
	}
}

// queue_one and skip hold at the target: a per-second job whose target
// takes 2.5 s never has two requests in flight, with two instances
// claiming (issue 11.3). Skipped occurrences are announced with the job's
// id (issue 11.10).
func TestExclusiveOverlapAtTheTarget(t *testing.T) {
	t.Parallel()
	for _, policy := range []chronos.OverlapPolicy{chronos.OverlapQueueOne, chronos.OverlapSkip} {
		t.Run(string(policy), func(t *testing.T) {
			dsn := parallelDSN(t)
			rec := newRecorder(t, 2500*time.Millisecond)
			cfg := Config{WorkerConcurrency: 4}
			a := startReactor(t, dsn, withInstance(cfg, "overlap-a-"+string(policy)))
			b := startReactor(t, dsn, withInstance(cfg, "overlap-b-"+string(policy)))
			startListener(t, dsn, "overlap-a-"+string(policy), a.bus)
			startListener(t, dsn, "overlap-b-"+string(policy), b.bus)
			skips := a.bus.Subscribe(256, func(e chronos.Event) bool { return e.Type == chronos.EventSkipped })
			defer skips.Close()
			skipsB := b.bus.Subscribe(256, func(e chronos.Event) bool { return e.Type == chronos.EventSkipped })
			defer skipsB.Close()

			expr := "* * * * * *"
			job := createJob(t, a.db, &chronos.Job{CronExpr: &expr, TargetURL: rec.URL, Overlap: policy})
			eventually(t, 30*time.Second, "three deliveries", func() bool { return len(rec.deliveries()) >= 3 })
			if m := rec.maxSeen.Load(); m > 1 {
				t.Errorf("%s: %d requests of one job in flight at once, want at most 1", policy, m)
			}
			var active, waiting int
			if err := a.db.Pool.QueryRow(context.Background(), `
				SELECT count(*) FILTER (WHERE status IN ('leased', 'running')),
				       count(*) FILTER (WHERE status = 'pending' AND trigger = 'schedule')
				  FROM job_runs WHERE job_id = $1`, job.ID).Scan(&active, &waiting); err != nil {
				t.Fatal(err)
			}
			if active > 1 || (policy == chronos.OverlapQueueOne && waiting > 1) {
				t.Errorf("%s: %d runs active and %d waiting, want at most 1 and 1", policy, active, waiting)
			}
			// Occurrences were skipped (one a second, each request takes
			// 2.5 s), and each skip names the job.
			var named int
			for _, sub := range []interface {
				C() <-chan chronos.Event
			}{skips, skipsB} {
			drain:
				for {
					select {
					case e := <-sub.C():
						if e.JobID != job.ID || e.Op != chronos.SkipOverlap || e.Count < 1 {
							t.Errorf("skip event %+v, want job %d, reason overlap", e, job.ID)
						}
						named++
					default:
						break drain
					}
				}
			}
			if named == 0 {
				t.Errorf("%s: no skipped occurrence announced", policy)
			}
		})
	}
}

// stopEverySecond starts a leader on dsn with cfg, creates an
// every-second job with the misfire policy misfire ("" for the default)
// delivering to rec, and stops the leader after two deliveries. It
// returns the leader, the database's time at the stop and how many of
// the job's runs the stop left pending (created ahead).
func stopEverySecond(t *testing.T, dsn string, cfg Config, rec *recorder, misfire chronos.MisfirePolicy) (*instance, time.Time, int) {
	t.Helper()
	first := startLeader(t, dsn, cfg)
	expr := "* * * * * *"
	j := createJob(t, first.db, &chronos.Job{CronExpr: &expr, TargetURL: rec.URL, Misfire: misfire})
	eventually(t, 10*time.Second, "two deliveries", func() bool { return len(rec.deliveries()) >= 2 })
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}
	stopped := dbNow(t, first.db)
	var pending int
	if err := first.db.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM job_runs WHERE job_id = $1 AND status = 'pending'", j.ID).Scan(&pending); err != nil {
		t.Fatal(err)
	}
	return first, stopped, pending
}

// After every instance stopped for longer than the lookahead, the target
// gets exactly one late request for the gap, flagged as the catch-up in
// the recorded, and then the schedule resumes on time (issue 11.5).
func TestCatchUpAfterClusterStop(t *testing.T) {
	dsn := parallelDSN(t)
	rec := newRecorder(t, 0)
	first, stopped, ahead := stopEverySecond(t, dsn, Config{}, rec, "")
	t.Logf("%d runs created ahead when the cluster stopped", ahead)
	waitDBTime(t, first.db, stopped.Add(6*time.Second), 30*time.Second)
	before := len(rec.deliveries())

	second := startReactor(t, dsn, Config{Instance: "restarted"})
	restarted := dbNow(t, second.db)
	// The catch-up stands for the latest occurrence missed when the
	// restarted leader's first tick runs, which on a loaded machine can
	// be a second or two after restarted: so late and on time are told
	// apart by the flag and by the catch-up's instant, not by restarted.
	var catchUps, onTime []recorded
	eventually(t, 20*time.Second, "on-time deliveries after the restart", func() bool {
		catchUps, onTime = nil, nil
		for _, d := range rec.deliveries()[before:] {
			if d.catchUp {
				catchUps = append(catchUps, d)
			} else if d.sched.After(restarted) {
				onTime = append(onTime, d)
			}
		}
		return len(catchUps) > 0 && len(onTime) >= 2
	})
	if len(catchUps) != 1 {
		t.Fatalf("after the gap the target got %d catch-up requests %+v, want exactly one", len(catchUps), catchUps)
	}
	for _, d := range rec.deliveries()[before:] {
		if !d.catchUp && !d.sched.After(catchUps[0].sched) {
			t.Fatalf("after the gap the target got %+v, an occurrence of the gap (the catch-up stands for it: %+v), want only the catch-up", d, catchUps[0])
		}
	}
	var flagged int
	if err := second.db.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM job_runs WHERE catch_up").Scan(&flagged); err != nil || flagged != 1 {
		t.Fatalf("%d runs flagged catch_up (%v), want 1", flagged, err)
	}
}
