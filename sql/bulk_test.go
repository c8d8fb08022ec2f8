package sql_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// A bulk resume of a full page (sql.MaxBulkJobs jobs) commits in chunks
// (100 jobs, fewer on a slow server): a call cut short (a crash, a
// cancelled request) has resumed exactly the jobs of the chunks it
// committed and returns those, and a page costs about ten commits, not one
// per job (a thousand commits took seconds on a loaded server).
func TestBulkResumeCommitsInChunks(t *testing.T) {
	db, ctx := parallelDB(t)
	jobs := make([]*chronos.Job, sql.MaxBulkJobs+5)
	for i := range jobs {
		j := cronJob("")
		j.RunAt = ptr(time.Now().Add(time.Hour))
		j.Enabled = false
		j.Labels = map[string]string{"bulk": "page"}
		jobs[i] = j
	}
	for i := 0; i < len(jobs); i += sql.MaxBulkJobs {
		if err := db.CreateJobs(ctx, jobs[i:min(i+sql.MaxBulkJobs, len(jobs))]); err != nil {
			t.Fatal(err)
		}
	}
	sel := map[string]string{"bulk": "page"}

	// Cancelled while it works: whole chunks are resumed, the ones it
	// returns, and paused again for the rest of the test.
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	cut, _, err := db.SetEnabledByLabels(cctx, sel, true)
	cancel()
	if err == nil {
		t.Log("the cancelled resume finished within 20 ms: nothing to check about a cut call")
	} else if !errors.Is(err, context.DeadlineExceeded) && cctx.Err() == nil {
		t.Fatalf("cancelled resume: %v", err)
	}
	if n := enabledCount(t, db, ctx); n != len(cut) {
		t.Fatalf("a resume cut short left %d of %d jobs resumed and returned %d: a chunk must be all or nothing", n, len(jobs), len(cut))
	}
	if paused, _, err := db.SetEnabledByLabels(ctx, sel, false); err != nil || len(paused) != len(cut) {
		t.Fatalf("pause again: %d of %d, %v", len(paused), len(cut), err)
	}

	start := time.Now()
	ids, more, err := db.SetEnabledByLabels(ctx, sel, true)
	took := time.Since(start)
	if err != nil || len(ids) != sql.MaxBulkJobs || !more {
		t.Fatalf("first page: %d ids, more %v, err %v", len(ids), more, err)
	}
	t.Logf("resumed a page of %d jobs in %s", len(ids), took.Round(time.Millisecond))
	if n := enabledCount(t, db, ctx); n != sql.MaxBulkJobs {
		t.Fatalf("%d jobs enabled after the first page, want %d", n, sql.MaxBulkJobs)
	}
	ids, more, err = db.SetEnabledByLabels(ctx, sel, true)
	if err != nil || len(ids) != 5 || more {
		t.Fatalf("second page: %v, more %v, err %v", ids, more, err)
	}
	var audits int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM job_audit WHERE action = 'resume'`).Scan(&audits); err != nil {
		t.Fatal(err)
	}
	if audits != len(jobs)+len(cut) {
		t.Fatalf("%d resume audit entries, want one per job resumed (%d)", audits, len(jobs)+len(cut))
	}
}

func enabledCount(t *testing.T, db *sql.DB, ctx context.Context) int {
	t.Helper()
	var n int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE enabled`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A bulk pause and resume leave a job exactly as a PATCH of enabled
// leaves its twin: the runs created ahead dropped on pause, the schedule
// row's next_run_at, the job's enabled, the audit entry. Cron and
// one-shot jobs, twins created and materialized alike.
func TestBulkPauseResumeAsPatch(t *testing.T) {
	db, ctx := parallelDB(t)
	now := dbNow(t, db)
	at := now.Add(90 * time.Second).Truncate(time.Second)
	type twin struct{ bulk, patch *chronos.Job }
	var twins []twin
	for _, mk := range []func() *chronos.Job{
		// Its first occurrence 30 s away: neither the runs created ahead
		// nor the next occurrence on resume change while the test runs.
		func() *chronos.Job {
			j := cronJob("*/20 * * * * *")
			j.StartsAt = ptr(now.Add(30 * time.Second))
			return j
		},
		func() *chronos.Job { j := cronJob(""); j.RunAt = ptr(at); return j },
	} {
		b, p := mk(), mk()
		b.Labels = map[string]string{"bulk": "twin"}
		twins = append(twins, twin{mustCreate(t, db, b), mustCreate(t, db, p)})
	}
	// Runs created ahead: a minute of the cron jobs', and the one-shots'.
	if _, err := db.Materialize(ctx, now, 2*time.Minute, 100); err != nil {
		t.Fatal(err)
	}
	type state struct {
		Enabled, SchedEnabled bool
		Next                  *time.Time
		Runs                  int
		Audit                 string
	}
	read := func(id int64) state {
		t.Helper()
		var s state
		if err := db.Pool.QueryRow(ctx, `
			SELECT j.enabled, s.enabled, s.next_run_at, (SELECT count(*) FROM job_runs r WHERE r.job_id = j.id),
			       coalesce((SELECT a.action || ' ' || COALESCE(a.creation::jsonb, a.changes)::text FROM job_audit a WHERE a.job_id = j.id ORDER BY a.id DESC LIMIT 1), '')
			  FROM jobs j JOIN job_schedules s ON s.job_id = j.id WHERE j.id = $1`, id).
			Scan(&s.Enabled, &s.SchedEnabled, &s.Next, &s.Runs, &s.Audit); err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, enabled := range []bool{false, true} {
		before := read(twins[0].bulk.ID)
		ids, _, err := db.SetEnabledByLabels(ctx, map[string]string{"bulk": "twin"}, enabled)
		if err != nil || len(ids) != len(twins) {
			t.Fatalf("bulk enabled=%v: %v, %v", enabled, ids, err)
		}
		for _, tw := range twins {
			if _, err := db.UpdateJob(ctx, tw.patch.ID, &chronos.JobUpdate{Enabled: chronos.Some(enabled)}); err != nil {
				t.Fatal(err)
			}
			b, p := read(tw.bulk.ID), read(tw.patch.ID)
			if fmt.Sprint(b) != fmt.Sprint(p) {
				t.Errorf("enabled=%v, job %d (cron %v): bulk left %+v, a PATCH left %+v", enabled, tw.bulk.ID, tw.bulk.CronExpr != nil, b, p)
			}
			if b.Enabled != enabled || b.SchedEnabled != enabled {
				t.Errorf("enabled=%v: bulk left %+v", enabled, b)
			}
		}
		if !enabled && before.Runs == 0 {
			t.Errorf("the cron job had no runs created ahead to drop: %+v", before)
		}
	}
}
