package sql_test

import (
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

func TestRunsListAndPrune(t *testing.T) {
	db, ctx, j := parallelJob(t, "0 0 1 1 *", func(j *chronos.Job) { j.MaxRetries = 0 })
	other := mustCreate(t, db, cronJob("0 0 1 1 *"))
	insertPending(t, db, j.ID, 30)
	insertPending(t, db, other.ID, 3)
	// 10 of j's runs dead.
	got, err := db.Claim(ctx, "w", 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var outs []sql.Outcome
	for _, c := range got {
		if c.Job.ID != j.ID {
			t.Fatalf("claimed %d of job %d: order is available_at, id", c.Run.ID, c.Job.ID)
		}
		outs = append(outs, sql.Outcome{Lease: c.Lease(), StatusCode: 500})
	}
	if _, err := db.Complete(ctx, outs); err != nil {
		t.Fatal(err)
	}

	walk := func(f sql.RunFilter) []*chronos.Run {
		var all []*chronos.Run
		for {
			page, next, err := db.Runs(ctx, j.ID, f)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, page...)
			if next == "" {
				return all
			}
			f.Cursor = next
		}
	}
	all := walk(sql.RunFilter{Limit: 4})
	if len(all) != 30 {
		t.Fatalf("walked %d runs, want 30", len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i].ID >= all[i-1].ID || all[i].JobID != j.ID {
			t.Fatal("runs not newest first, or of another job")
		}
	}
	dead := walk(sql.RunFilter{Status: chronos.StatusDead, Limit: 3})
	if len(dead) != 10 {
		t.Fatalf("%d dead runs, want 10", len(dead))
	}
	for _, r := range dead {
		if r.Status != chronos.StatusDead {
			t.Fatalf("run %d is %s in a dead page", r.ID, r.Status)
		}
	}
	_, _, err = db.Runs(ctx, j.ID, sql.RunFilter{Status: "bogus"})
	wantCode(t, err, chronos.EINVALID)
	_, _, err = db.Runs(ctx, j.ID, sql.RunFilter{Cursor: "nope"})
	wantCode(t, err, chronos.EINVALID)
	_, _, err = db.Runs(ctx, 999999, sql.RunFilter{})
	wantCode(t, err, chronos.ENOTFOUND)
	if page, next, err := db.Runs(ctx, other.ID, sql.RunFilter{Status: chronos.StatusDead}); err != nil || len(page) != 0 || next != "" {
		t.Fatalf("empty page of an existing job: %v %q %v", page, next, err)
	}
	_, err = db.Run(ctx, 999999)
	wantCode(t, err, chronos.ENOTFOUND)

	// Prune: nothing within the retention; past it, a partition (or the
	// default partition's strays) goes, unless it holds unfinished runs:
	// no pending run is lost, and a terminal run stays only in a kept
	// partition. (sql/partitions_test.go tests partitions in detail.)
	var pending0 int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM job_runs WHERE status = 'pending'").Scan(&pending0); err != nil {
		t.Fatal(err)
	}
	res, err := db.PruneRunPartitions(ctx, time.Hour)
	if err != nil || res.Runs != 0 || len(res.Kept) != 0 {
		t.Fatalf("prune of recent runs: %+v %v", res, err)
	}
	res, err = db.PruneRunPartitions(ctx, -time.Hour) // a cutoff an hour ahead: every run is old enough
	if err != nil {
		t.Fatal(err)
	}
	var pending, strays int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'pending'),
		count(*) FILTER (WHERE status <> 'pending' AND NOT tableoid::regclass::text = ANY($1))
		FROM job_runs`, res.Kept).Scan(&pending, &strays); err != nil || pending != pending0 || strays != 0 {
		t.Fatalf("after prune %+v: %d pending runs (want %d), %d terminal ones outside kept partitions (%v)", res, pending, pending0, strays, err)
	}
	// Deleting the job takes its runs along.
	if err := db.DeleteJob(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	var runs int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM job_runs WHERE job_id = $1", j.ID).Scan(&runs); err != nil || runs != 0 {
		t.Fatalf("%d runs survive their job (%v)", runs, err)
	}
}
