package sql_test

import (
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
			j := cronJob("* * * * * *")
			j.JitterSeconds = 600
			mustCreate(t, db, j)
			// The leader was a few seconds ahead of now: runs for the
			// occurrences from 5 s ago to 5 s ahead, each available at
			// its instant plus up to ten minutes of jitter.
			now := dbNow(t, db).Truncate(time.Second)
			from := now.Add(-5 * time.Second)
			setNextRunAt(t, db, j.ID, &from)
			if _, err := db.Materialize(ctx, from, 10*time.Second, 100); err != nil {
				t.Fatal(err)
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
			var passed []time.Time // instant passed, fire time not
			rows, err := db.Pool.Query(ctx, `SELECT scheduled_at FROM job_runs
				WHERE job_id = $1 AND scheduled_at <= now() AND available_at > now() + interval '1 minute'`, j.ID)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var at time.Time
				if err := rows.Scan(&at); err != nil {
					t.Fatal(err)
				}
				passed = append(passed, at.UTC())
			}
			if rows.Err() != nil || len(passed) == 0 {
				t.Fatalf("no run whose instant passed but whose fire time has not (%v): the setup is wrong", rows.Err())
			}

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
			// Materialize on: every occurrence from the first to 10 s
			// ahead has exactly one run.
			if _, err := db.Materialize(ctx, time.Time{}, 10*time.Second, 100); err != nil {
				t.Fatal(err)
			}
			got := runs()
			end := dbNow(t, db).Add(10 * time.Second)
			for at := from; !at.After(end); at = at.Add(time.Second) {
				if at.After(now.Add(time.Second)) && got[at] != 1 || got[at] > 1 {
					t.Errorf("occurrence %s has %d runs, want 1", at.Format(time.RFC3339), got[at])
				}
			}
			for at, n := range got {
				if n != 1 {
					t.Errorf("occurrence %s has %d runs", at.Format(time.RFC3339), n)
				}
			}
		})
	}
}
