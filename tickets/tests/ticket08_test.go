package tests

import (
	"context"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// Ticket 08: cron jobs produce runs. An enabled `*/1 * * * * *` job gets a
// run for each due occurrence from the leader's materializer, and its target
// is called.
func TestTicket08CronJobsProduceRuns(t *testing.T) {
	dsn := parallelDSN(t)
	tg := rxNewTarget(t, nil)
	in := rxStart(t, dsn, "t08", rxOptions{Reactor: true, Listener: true})
	rxEventually(t, 20*time.Second, "leadership", in.Reactor.IsLeader)

	expr := "*/1 * * * * *"
	job := rxJob(t, in.DB, &chronos.Job{CronExpr: &expr, TargetURL: tg.URL})
	var runs []*chronos.Run
	rxEventually(t, 30*time.Second, "three runs delivered", func() bool {
		var err error
		runs, _, err = in.DB.Runs(context.Background(), job.ID, sql.RunFilter{Status: chronos.StatusSucceeded, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return len(runs) >= 3
	})
	if h := tg.Hits.Load(); h < 3 {
		t.Errorf("the target was called %d times for %d succeeded runs", h, len(runs))
	}
	runs, _, err := in.DB.Runs(context.Background(), job.ID, sql.RunFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[time.Time]bool{}
	succeeded := 0
	for _, r := range runs {
		if r.Trigger != chronos.TriggerSchedule {
			t.Errorf("run %d has trigger %s, want schedule", r.ID, r.Trigger)
		}
		if seen[r.ScheduledAt] {
			t.Errorf("two runs for the occurrence %s", r.ScheduledAt)
		}
		seen[r.ScheduledAt] = true
		if !r.ScheduledAt.Equal(r.ScheduledAt.Truncate(time.Second)) {
			t.Errorf("run %d scheduled at %s, not on a second", r.ID, r.ScheduledAt)
		}
		if r.Status == chronos.StatusSucceeded {
			succeeded++
		}
	}
	if succeeded < 3 {
		t.Errorf("%d succeeded runs of %d, want at least 3", succeeded, len(runs))
	}
}
