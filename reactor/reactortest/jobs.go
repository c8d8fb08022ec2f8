package reactortest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// jobSeq numbers unnamed test jobs: names are unique.
var jobSeq atomic.Int64

// CreateJob stores j, enabled, with the defaults applied. Without a name it
// is "test-<n>", unique; without cron_expr or run_at it is a one-shot a year ahead, so
// it only runs when triggered.
func CreateJob(t testing.TB, db *sql.DB, j *chronos.Job) *chronos.Job {
	t.Helper()
	if j.Name == "" {
		j.Name = fmt.Sprintf("test-%d", jobSeq.Add(1))
	}
	if j.CronExpr == nil && j.RunAt == nil {
		at := time.Now().Add(365 * 24 * time.Hour).UTC()
		j.RunAt = &at
	}
	j.Enabled = true
	j.ApplyDefaults()
	if err := j.Validate(); err != nil {
		t.Fatalf("job invalid: %v", err)
	}
	if err := db.CreateJob(context.Background(), j); err != nil {
		t.Fatalf("create job: %v", err)
	}
	return j
}

// WaitStatus waits up to d for the run to reach status, and returns it as
// read then.
func WaitStatus(t testing.TB, db *sql.DB, id int64, status chronos.RunStatus, d time.Duration) *chronos.Run {
	t.Helper()
	var r *chronos.Run
	Eventually(t, d, "run in status "+string(status), func() bool {
		r = sqltest.Run(t, db, id)
		return r.Status == status
	})
	return r
}

// WaitTerminal waits up to d for the run to succeed or die, and returns it
// as read then.
func WaitTerminal(t testing.TB, db *sql.DB, id int64, d time.Duration) *chronos.Run {
	t.Helper()
	var r *chronos.Run
	Eventually(t, d, "run finished", func() bool {
		r = sqltest.Run(t, db, id)
		return r.Status.Terminal()
	})
	return r
}
