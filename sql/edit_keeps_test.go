package sql_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// windowEdits are PATCHes of exclude, starts_at and ends_at that keep a
// yearly schedule's occurrences.
func windowEdits() map[string]*chronos.JobUpdate {
	return map[string]*chronos.JobUpdate{
		"exclude":   {Exclude: chronos.Some([]chronos.DateRange{{From: "2099-01-01", To: "2099-01-02"}})},
		"starts_at": {StartsAt: chronos.Some(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))},
		"ends_at":   {EndsAt: chronos.Some(time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC))},
	}
}

// jitteredPastOccurrence creates a yearly job (jitter may be up to an
// hour) moved by hand onto an instant a few seconds ago whose jitter puts
// its fire time minutes ahead, with that instant as its next_run_at, and
// returns the job and the instant.
func jitteredPastOccurrence(t *testing.T, db *sql.DB) (*chronos.Job, time.Time) {
	t.Helper()
	j := cronJob("0 0 0 1 1 *")
	j.JitterSeconds = chronos.MaxJitterSeconds
	mustCreate(t, db, j)
	now := dbNow(t, db).Truncate(time.Second)
	var at time.Time
	for k := 2; k < 600 && at.IsZero(); k++ {
		if c := now.Add(-time.Duration(k) * time.Second); chronos.Jitter(j.ID, c, j.JitterSeconds) > time.Duration(k)*time.Second+2*time.Minute {
			at = c
		}
	}
	if at.IsZero() {
		t.Fatal("no instant in the last ten minutes whose jitter reaches past now")
	}
	expr := fmt.Sprintf("%d %d %d %d %d *", at.Second(), at.Minute(), at.Hour(), at.Day(), int(at.Month()))
	if _, err := db.Pool.Exec(t.Context(), "UPDATE jobs SET cron_expr = $2 WHERE id = $1", j.ID, expr); err != nil {
		t.Fatal(err)
	}
	setNextRunAt(t, db, j.ID, &at)
	return j, at
}

// A PATCH of exclude, starts_at or ends_at keeps every run created ahead
// whose occurrence the new plan still contains: in particular a jittered
// occurrence whose instant has passed but whose jittered fire time has not
// (issue 22.4). And it never doubles one: materializing afterwards gives
// each occurrence one run, with none missing between.
func TestEditKeepsJitteredOccurrences(t *testing.T) {
	t.Parallel()
	for name, u := range windowEdits() {
		t.Run(name, func(t *testing.T) {
			db, ctx := parallelDB(t)
			// The leader created its run just before the instant.
			j, at := jitteredPastOccurrence(t, db)
			if res, err := db.Materialize(ctx, at.Add(-time.Second), 2*time.Second, 10); err != nil || res.Created != 1 {
				t.Fatalf("materialized %+v (%v), want the one run", res, err)
			}
			passed := []time.Time{at}

			if _, err := db.UpdateJob(ctx, j.ID, u); err != nil {
				t.Fatal(err)
			}
			after := runInstants(t, db, j.ID)
			for _, at := range passed {
				if after[at] != 1 {
					t.Errorf("the occurrence at %s (passed, its jittered run not yet due) has %d runs after the edit, want 1",
						at.Format(time.RFC3339), after[at])
				}
			}
			// Materialize on: the occurrence has still one run, and the
			// schedule goes on next year.
			if _, err := db.Materialize(ctx, time.Time{}, 10*time.Second, 100); err != nil {
				t.Fatal(err)
			}
			if got := runInstants(t, db, j.ID); len(got) != 1 || got[at] != 1 {
				t.Errorf("runs after materializing again: %v, want one at %s", got, at.Format(time.RFC3339))
			}
			stored, err := db.Job(ctx, j.ID)
			if err != nil {
				t.Fatal(err)
			}
			if stored.NextRunAt == nil || !stored.NextRunAt.After(at.AddDate(0, 11, 0)) {
				t.Errorf("next_run_at %v after the edit, want next year's occurrence", stored.NextRunAt)
			}
		})
	}
}

// An edit's schedule goes on from the new plan's next occurrence, not past
// the runs it kept: an occurrence of the new plan that lies before a kept
// run but had none (the old plan excluded it) is still created. Before,
// next_run_at jumped past the last kept run and that occurrence was lost.
func TestEditGoesOnFromNewPlansNextOccurrence(t *testing.T) {
	db, ctx := parallelDB(t)
	// Daily at noon, tomorrow excluded; runs created three days ahead.
	now := dbNow(t, db)
	tomorrow := time.Date(now.Year(), now.Month(), now.Day()+1, 12, 0, 0, 0, time.UTC)
	day := tomorrow.Format(time.DateOnly)
	j := cronJob("0 0 12 * * *")
	j.Exclude = []chronos.DateRange{{From: day, To: day}}
	mustCreate(t, db, j)
	if _, err := db.Materialize(ctx, now, 72*time.Hour, 10); err != nil {
		t.Fatal(err)
	}
	has := func(at time.Time) bool {
		var n int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM job_runs WHERE job_id = $1 AND scheduled_at = $2`,
			j.ID, at).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	later := tomorrow.AddDate(0, 0, 1)
	if has(tomorrow) || !has(later) {
		t.Fatalf("before the edit: run tomorrow %v (excluded), the day after %v: want none, one", has(tomorrow), has(later))
	}

	// Clear the exclusion: the runs for the day after and later are kept
	// (the new plan has them), tomorrow is the new plan's too.
	if _, err := db.UpdateJob(ctx, j.ID, &chronos.JobUpdate{Exclude: chronos.Some([]chronos.DateRange{})}); err != nil {
		t.Fatal(err)
	}
	if !has(later) {
		t.Fatalf("the edit dropped the run of %s, which the new plan keeps", later.Format(time.RFC3339))
	}
	stored, err := db.Job(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.NextRunAt == nil || stored.NextRunAt.After(tomorrow) {
		t.Fatalf("next_run_at %v after the edit, want the new plan's next occurrence (at the latest %s)", stored.NextRunAt, tomorrow.Format(time.RFC3339))
	}
	if _, err := db.Materialize(ctx, now, 72*time.Hour, 10); err != nil {
		t.Fatal(err)
	}
	if !has(tomorrow) {
		t.Errorf("no run for %s, an occurrence of the new plan that the edit lost", tomorrow.Format(time.RFC3339))
	}
}

// The same occurrence when no run stands for it yet: the job is behind
// (no leader came round to it, or its overlap policy put off creating it
// to its instant), so next_run_at still holds it. The edit goes on from
// it rather than from the first occurrence after now, and the run is
// created (issue 22.4: before, the edit skipped to next year).
func TestEditKeepsJitteredOccurrenceNotYetCreated(t *testing.T) {
	t.Parallel()
	for name, u := range windowEdits() {
		t.Run(name, func(t *testing.T) {
			db, ctx := parallelDB(t)
			j, at := jitteredPastOccurrence(t, db) // due, not materialized

			if _, err := db.UpdateJob(ctx, j.ID, u); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Materialize(ctx, time.Time{}, 2*time.Second, 10); err != nil {
				t.Fatal(err)
			}
			var n int
			var fire time.Time
			err := db.Pool.QueryRow(ctx, `SELECT count(*), coalesce(max(available_at), 'epoch') FROM job_runs WHERE job_id = $1 AND scheduled_at = $2`,
				j.ID, at).Scan(&n, &fire)
			if err != nil {
				t.Fatal(err)
			}
			if n != 1 || !fire.Equal(j.FireAt(at)) {
				t.Fatalf("the occurrence at %s (passed, due with its jitter at %s) has %d runs after the edit (available %s), want 1",
					at.Format(time.RFC3339), j.FireAt(at).Format(time.RFC3339), n, fire.Format(time.RFC3339))
			}
			stored, err := db.Job(ctx, j.ID)
			if err != nil {
				t.Fatal(err)
			}
			if stored.NextRunAt == nil || !stored.NextRunAt.After(at.AddDate(0, 11, 0)) {
				t.Errorf("next_run_at %v after materializing, want next year's occurrence", stored.NextRunAt)
			}
		})
	}
}
