package reactor

import (
	"context"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/reactor/reactortest"
)

// Jitter end to end (issue 14.2): each occurrence reaches the target no
// earlier than its nominal instant plus the job's deterministic offset, and
// X-Chronos-Scheduled-At still carries the nominal instant.
func TestJitterAtTheTarget(t *testing.T) {
	dsn := parallelDSN(t)
	rec := newRecorder(t, 0)
	in := startLeader(t, dsn, Config{})
	expr := "*/5 * * * * *"
	job := createJob(t, in.db, &chronos.Job{CronExpr: &expr, TargetURL: rec.URL, JitterSeconds: 4})
	eventually(t, 30*time.Second, "two deliveries", func() bool { return len(rec.deliveries()) >= 2 })
	for _, d := range rec.deliveries() {
		if d.sched.Second()%5 != 0 || d.sched.Nanosecond() != 0 {
			t.Errorf("X-Chronos-Scheduled-At %v is not the nominal instant", d.sched)
		}
		// Arrival is on this process's clock, the jitter on the database's:
		// allow for a little skew between them, never for a missing delay.
		if want := d.sched.Add(chronos.Jitter(job.ID, d.sched, 4)); d.at.Before(want.Add(-50 * time.Millisecond)) {
			t.Errorf("occurrence %v arrived at %v, before its jittered instant %v", d.sched, d.at, want)
		}
	}
	var sched, avail time.Time
	if err := in.db.Pool.QueryRow(context.Background(), `
		SELECT scheduled_at, available_at FROM job_runs WHERE job_id = $1 AND attempt_count = 1
		 ORDER BY scheduled_at LIMIT 1`, job.ID).Scan(&sched, &avail); err != nil {
		t.Fatal(err)
	}
	if !avail.Equal(sched.Add(chronos.Jitter(job.ID, sched, 4))) {
		t.Errorf("run shows scheduled_at %v, available_at %v: want the jittered instant", sched, avail)
	}
}

// A run that could not start within starting_deadline_seconds ends missed,
// is never delivered, and the leader announces it with the job's id
// (issue 14.4).
func TestStartingDeadlineMissedAnnounced(t *testing.T) {
	dsn := parallelDSN(t)
	rec := newRecorder(t, 0)
	in := startReactor(t, dsn, Config{})
	skips := in.bus.Subscribe(64, func(e chronos.Event) bool { return e.Type == chronos.EventSkipped })
	defer skips.Close()
	eventually(t, 10*time.Second, "leadership", in.r.IsLeader)
	expr := "0 0 1 1 *"
	deadline := 2
	job := createJob(t, in.db, &chronos.Job{CronExpr: &expr, TargetURL: rec.URL, StartingDeadlineSeconds: &deadline})
	// A run of an occurrence 10 s ago, left behind by an outage.
	var runID int64
	if err := in.db.Pool.QueryRow(context.Background(), `
		INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at)
		VALUES ($1, now() - interval '10 seconds', 'schedule', now() - interval '10 seconds') RETURNING id`,
		job.ID).Scan(&runID); err != nil {
		t.Fatal(err)
	}
	run := reactortest.WaitStatus(t, in.db, runID, chronos.StatusMissed, 20*time.Second)
	if run.AttemptCount != 0 || run.FinishedAt == nil || len(rec.deliveries()) != 0 {
		t.Fatalf("missed run %+v, %d deliveries", run, len(rec.deliveries()))
	}
	select {
	case e := <-skips.C():
		if e.JobID != job.ID || e.Op != chronos.SkipDeadline || e.Count != 1 {
			t.Fatalf("event %+v, want job %d, op deadline, count 1", e, job.ID)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no skipped event for the missed run")
	}
}
