package sql_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/internal/testwait"
	"github.com/chronoshq/chronos/sql"
)

// The claim locks a run, then (inserting the job's overlap lock row,
// whose foreign key references jobs) takes FOR KEY SHARE on the job's
// row. A PATCH or a DELETE of the job that locked the job's row in a mode
// conflicting with that, and then waited for the run, deadlocked with it
// (SQLSTATE 40P01, an HTTP 500; found by the faults model: a PATCH of
// {"starts_at":null,"ends_at":null} on a queue_one job, and a DELETE).
//
// The claim's two steps are replayed here by hand, in its order, around
// an UpdateJob or DeleteJob that waits for the run: the "claim" inserts
// its lock row only once the API's transaction has waited longer than
// deadlock_timeout, so that if there is a cycle it is the claim's
// statement that detects it and fails (and an API-side retry cannot hide
// it).
func TestAPIWriteDoesNotDeadlockWithClaim(t *testing.T) {
	t.Parallel()
	for _, op := range []string{"patch", "delete"} {
		t.Run(op, func(t *testing.T) {
			db, ctx, j := parallelJob(t, "0 0 1 1 *", func(j *chronos.Job) {
				j.Overlap = chronos.OverlapQueueOne
				j.StartsAt = ptr(time.Now().Add(-time.Hour).UTC().Truncate(time.Second))
			})
			var runID int64
			// A run created ahead: the PATCH's dropRunsAhead locks it.
			err := db.Pool.QueryRow(ctx, `
				INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at, fire_at)
				VALUES ($1, now() + interval '1 hour', 'schedule', now() + interval '1 hour', now() + interval '1 hour')
				RETURNING id`, j.ID).Scan(&runID)
			if err != nil {
				t.Fatal(err)
			}

			claim, err := db.Pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer claim.Rollback(context.Background()) //nolint:errcheck // after the test
			if _, err := claim.Exec(ctx, "SELECT 1 FROM job_runs WHERE id = $1 FOR UPDATE", runID); err != nil {
				t.Fatal(err)
			}

			done := make(chan error, 1)
			go func() {
				if op == "patch" {
					_, err := db.UpdateJob(ctx, j.ID, &chronos.JobUpdate{
						StartsAt: chronos.Opt[time.Time]{Set: true, Null: true},
						EndsAt:   chronos.Opt[time.Time]{Set: true, Null: true},
					})
					done <- err
					return
				}
				done <- db.DeleteJob(ctx, j.ID)
			}()
			waitForLockWaiter(t, db, done)

			// The claim's second step: its lock row, FOR KEY SHARE on jobs.
			if _, err := claim.Exec(ctx, "INSERT INTO job_run_locks (job_id, run_id) VALUES ($1, $2)", j.ID, runID); err != nil {
				t.Fatalf("%s: the claim's lock row: %v", op, err)
			}
			if err := claim.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			testwait.Nil(t, done, 30*time.Second, op+" after the claim ended")
		})
	}
}

// waitForLockWaiter waits until a session of db's database has waited for
// a lock for longer than deadlock_timeout (its deadlock check has run).
func waitForLockWaiter(t *testing.T, db *sql.DB, done <-chan error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n := count(t, db, `
			SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			 WHERE NOT l.granted AND a.datname = current_database()
			   AND l.waitstart < clock_timestamp() - current_setting('deadlock_timeout')::interval - interval '100 ms'`)
		if n > 0 {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("the API write ended (%v) without waiting for the claim's run", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no session waits for a lock")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A queue_one job firing every second, claimed and completed by a worker
// and materialized by a leader without pause, while the API edits its
// window and finally deletes it: no party gets an error (a deadlock was a
// 500 for the API, or a failed claim or completion for the worker).
func TestAPIWritesRaceClaimsAndMaterializer(t *testing.T) {
	db, ctx, j := parallelJob(t, "* * * * * *", func(j *chronos.Job) { j.Overlap = chronos.OverlapQueueOne })
	stop := make(chan struct{})
	errs := make(chan error, 3)
	loop := func(what string, f func() error) {
		for {
			select {
			case <-stop:
				errs <- nil
				return
			default:
			}
			if err := f(); err != nil {
				errs <- fmt.Errorf("%s: %w", what, err)
				return
			}
		}
	}
	go loop("materialize", func() error {
		_, err := db.Materialize(ctx, time.Time{}, 5*time.Second, 10)
		return err
	})
	go loop("claim and complete", func() error {
		c, err := db.ClaimAhead(ctx, "w", 5, time.Minute, 2*time.Second)
		if err != nil {
			return err
		}
		outs := make([]sql.Outcome, 0, len(c))
		for _, r := range c {
			now := time.Now()
			outs = append(outs, sql.Outcome{Lease: r.Lease(), Success: true, StatusCode: 200, StartedAt: now, FinishedAt: now})
		}
		_, err = db.Complete(ctx, outs)
		return err
	})
	deadline := time.Now().Add(3 * time.Second)
	go loop("patch", func() error {
		u := &chronos.JobUpdate{StartsAt: chronos.Opt[time.Time]{Set: true, Null: true}, EndsAt: chronos.Opt[time.Time]{Set: true, Null: true}}
		if time.Now().UnixMilli()%2 == 0 {
			u = &chronos.JobUpdate{StartsAt: chronos.Some(time.Now().Add(-time.Hour).UTC())}
		}
		_, err := db.UpdateJob(ctx, j.ID, u)
		return err
	})
	for time.Now().Before(deadline) {
		select {
		case err := <-errs:
			close(stop)
			t.Fatal(err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	delErr := db.DeleteJob(ctx, j.ID)
	close(stop)
	for range 3 {
		if err := <-errs; err != nil && !(strings.HasPrefix(err.Error(), "patch:") && chronos.ErrorCode(err) == chronos.ENOTFOUND) {
			t.Error(err)
		}
	}
	if delErr != nil {
		t.Fatalf("delete: %v", delErr)
	}
}
