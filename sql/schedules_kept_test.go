package sql_test

import (
	"testing"
	"time"
)

// A job's schedule row goes with the job however the job goes (the API's
// delete, a plain multi-row DELETE, TRUNCATE), and no other job's row
// goes with it: since migration 038 triggers keep job_schedules, where a
// foreign key's cascade did.
func TestScheduleRowsGoWithTheirJobs(t *testing.T) {
	db, ctx, a := parallelJob(t, "*/5 * * * *")
	oneShot := cronJob("")
	oneShot.RunAt = ptr(time.Now().Add(time.Hour))
	b, c, d := mustCreate(t, db, cronJob("0 * * * *")), mustCreate(t, db, oneShot), mustCreate(t, db, cronJob("0 0 * * *"))
	rows := func() map[int64]bool {
		t.Helper()
		r, err := db.Pool.Query(ctx, "SELECT job_id FROM job_schedules")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		got := map[int64]bool{}
		for r.Next() {
			var id int64
			if err := r.Scan(&id); err != nil {
				t.Fatal(err)
			}
			got[id] = true
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := rows(); len(got) != 4 || !got[a.ID] || !got[b.ID] || !got[c.ID] || !got[d.ID] {
		t.Fatalf("schedule rows %v, want one for each of the jobs %d, %d, %d, %d", got, a.ID, b.ID, c.ID, d.ID)
	}

	if err := db.DeleteJob(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if got := rows(); len(got) != 3 || got[a.ID] {
		t.Fatalf("after deleting job %d: schedule rows %v", a.ID, got)
	}

	if _, err := db.Pool.Exec(ctx, "DELETE FROM jobs WHERE id = ANY($1)", []int64{b.ID, c.ID}); err != nil {
		t.Fatal(err)
	}
	if got := rows(); len(got) != 1 || !got[d.ID] {
		t.Fatalf("after deleting jobs %d and %d: schedule rows %v, want job %d's alone", b.ID, c.ID, got, d.ID)
	}

	if _, err := db.Pool.Exec(ctx, "TRUNCATE jobs CASCADE"); err != nil {
		t.Fatal(err)
	}
	if got := rows(); len(got) != 0 {
		t.Fatalf("after TRUNCATE jobs: schedule rows %v", got)
	}
}
