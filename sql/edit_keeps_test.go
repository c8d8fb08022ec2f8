package sql_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// A PATCH of exclude, starts_at or ends_at keeps every run created ahead
// whose occurrence the new plan still contains: in particular a jittered
// occurrence whose instant has passed but whose jittered fire time has not
// (issue 22.4). And it never doubles one: materializing afterwards gives
// each occurrence one run, with none missing between.
func TestEditKeepsJitteredOccurrences(t *testing.T) {
	t.Parallel()
	for name, u := range map[string]*chronos.JobUpdate{
		"exclude":   {Exclude: chronos.Some([]chronos.DateRange{{From: "2099-01-01", To: "2099-01-02"}})},
		"starts_at": {StartsAt: chronos.Some(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))},
		"ends_at":   {EndsAt: chronos.Some(time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC))},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := sqltest.New(t)
			ctx := t.Context()
			// A yearly schedule (jitter may be up to an hour), moved by
			// hand onto an instant a few seconds ago whose jitter puts its
			// fire time minutes ahead: the leader created its run just
			// before the instant.
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
			if _, err := db.Pool.Exec(ctx, "UPDATE jobs SET cron_expr = $2 WHERE id = $1", j.ID, expr); err != nil {
				t.Fatal(err)
			}
			setNextRunAt(t, db, j.ID, &at)
			if res, err := db.Materialize(ctx, at.Add(-time.Second), 2*time.Second, 10); err != nil || res.Created != 1 {
				t.Fatalf("materialized %+v (%v), want the one run", res, err)
			}
			runs := func() map[time.Time]int {
				rows, err := db.Pool.Query(ctx, `SELECT scheduled_at FROM job_runs WHERE job_id = $1`, j.ID)
				if err != nil {
					t.Fatal(err)
				}
				defer rows.Close()
				got := map[time.Time]int{}
				for rows.Next() {
					var at time.Time
					if err := rows.Scan(&at); err != nil {
						t.Fatal(err)
					}
					got[at.UTC()]++
				}
				return got
			}
			passed := []time.Time{at}

			if _, err := db.UpdateJob(ctx, j.ID, u); err != nil {
				t.Fatal(err)
			}
			after := runs()
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
			if got := runs(); len(got) != 1 || got[at] != 1 {
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
