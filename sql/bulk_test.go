package sql_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// A bulk resume of a full page (sql.MaxBulkJobs jobs) commits in chunks of
// 100: a call cut short (a crash, a cancelled request) leaves whole chunks
// resumed, never part of one, and a page costs ten commits, not one per
// job (a thousand commits took seconds on a loaded server).
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
	if n := enabledCount(t, db, ctx); n%100 != 0 || n != len(cut) {
		t.Fatalf("a resume cut short left %d of %d jobs resumed and returned %d: a chunk of 100 must be all or nothing", n, len(jobs), len(cut))
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
