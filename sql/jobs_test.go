package sql_test

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

func TestJobCRUD(t *testing.T) {
	db, ctx, j := parallelJob(t, "*/5 * * * *", func(j *chronos.Job) {
		j.Headers = map[string]string{"X-Env": "prod"}
		j.Payload = json.RawMessage(`{"b": 1,  "a": [2]}`)
		j.Timezone = "Europe/Berlin"
	})
	if j.ID == 0 || j.NextRunAt == nil || j.CreatedAt.IsZero() {
		t.Fatalf("create did not fill id/next/created: %+v", j)
	}
	if !j.NextRunAt.After(time.Now()) || j.NextRunAt.Location() != time.UTC {
		t.Fatalf("next_run_at %v", j.NextRunAt)
	}
	got, err := db.Job(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Payload) != `{"b": 1,  "a": [2]}` {
		t.Errorf("payload not byte for byte: %s", got.Payload)
	}
	if got.Headers["X-Env"] != "prod" || got.Timezone != "Europe/Berlin" || *got.CronExpr != "*/5 * * * *" ||
		got.Backoff != chronos.BackoffExponential || got.Overlap != chronos.OverlapAllow || !got.Enabled {
		t.Errorf("stored job differs: %+v", got)
	}

	// PATCH without enabled: enabled untouched, next_run_at recomputed.
	setNextRunAt(t, db, j.ID, ptr(time.Now().Add(-time.Hour)))
	up, err := db.UpdateJob(ctx, j.ID, &chronos.JobUpdate{CronExpr: chronos.Some("0 3 * * *")})
	if err != nil {
		t.Fatal(err)
	}
	if !up.Enabled || *up.CronExpr != "0 3 * * *" || up.NextRunAt == nil || !up.NextRunAt.After(time.Now()) {
		t.Fatalf("update: %+v", up)
	}
	if up.NextRunAt.In(got.Location()).Hour() != 3 {
		t.Errorf("next_run_at %v is not 03:00 Berlin", up.NextRunAt)
	}
	if string(up.Payload) != string(got.Payload) || up.Name != got.Name {
		t.Errorf("absent fields changed: %+v", up)
	}
	// Name only: next_run_at untouched.
	up2, err := db.UpdateJob(ctx, j.ID, &chronos.JobUpdate{Name: chronos.Some("renamed")})
	if err != nil {
		t.Fatal(err)
	}
	if !up2.NextRunAt.Equal(*up.NextRunAt) || up2.Name != "renamed" {
		t.Errorf("rename moved the schedule: %v -> %v", up.NextRunAt, up2.NextRunAt)
	}
	// Both cron and run_at: EINVALID naming the fields.
	_, err = db.UpdateJob(ctx, j.ID, &chronos.JobUpdate{RunAt: chronos.Some(time.Now())})
	wantCode(t, err, chronos.EINVALID)
	var ae *chronos.Error
	if !asError(err, &ae) || ae.Fields["run_at"] == "" {
		t.Errorf("error does not name run_at: %v", err)
	}
	_, err = db.UpdateJob(ctx, 999999, &chronos.JobUpdate{Name: chronos.Some("x")})
	wantCode(t, err, chronos.ENOTFOUND)

	if err := db.DeleteJob(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	wantCode(t, db.DeleteJob(ctx, j.ID), chronos.ENOTFOUND)
	_, err = db.Job(ctx, j.ID)
	wantCode(t, err, chronos.ENOTFOUND)
}

func TestCreateJobInvalid(t *testing.T) {
	t.Parallel()
	db := sqltest.New(t)
	j := cronJob("* * * * *")
	j.RunAt = ptr(time.Now())
	wantCode(t, db.CreateJob(t.Context(), j), chronos.EINVALID)
	j = cronJob("not a cron")
	wantCode(t, db.CreateJob(t.Context(), j), chronos.EINVALID)
	// The database constraint backs validation up.
	_, err := db.Pool.Exec(t.Context(), `INSERT INTO jobs (name, target_url) VALUES ('x', 'http://x')`)
	if err == nil {
		t.Fatal("a job with neither cron_expr nor run_at was stored")
	}
}

func TestDisableDropsPreCreatedRuns(t *testing.T) {
	db, ctx, j := parallelJob(t, "* * * * * *")
	now := time.Now()
	setNextRunAt(t, db, j.ID, ptr(now.Add(30*time.Second).Truncate(time.Second)))
	res, err := db.Materialize(ctx, now, time.Minute, 10)
	if err != nil || res.Created == 0 {
		t.Fatalf("materialize: %+v %v", res, err)
	}
	if _, err := db.UpdateJob(ctx, j.ID, &chronos.JobUpdate{Enabled: chronos.Some(false)}); err != nil {
		t.Fatal(err)
	}
	if active, err := db.HasActiveRun(ctx, j.ID); err != nil || active {
		t.Fatalf("pre-created runs survive disabling: active=%v err=%v", active, err)
	}
}

func TestOneShotReenableDoesNotFireTwice(t *testing.T) {
	db, ctx, j := parallelJob(t, "", func(j *chronos.Job) { j.RunAt = ptr(time.Now().Add(-time.Minute)) })
	if res, err := db.Materialize(ctx, time.Now(), 0, 10); err != nil || res.Created != 1 {
		t.Fatalf("materialize: %+v %v", res, err)
	}
	if _, err := db.UpdateJob(ctx, j.ID, &chronos.JobUpdate{Enabled: chronos.Some(false)}); err != nil {
		t.Fatal(err)
	}
	up, err := db.UpdateJob(ctx, j.ID, &chronos.JobUpdate{Enabled: chronos.Some(true)})
	if err != nil {
		t.Fatal(err)
	}
	if up.NextRunAt != nil {
		t.Fatalf("re-enabled one-shot scheduled again at %v", up.NextRunAt)
	}
}

// TestUpdateEndedCronJob: a cron job whose year-bounded schedule has ended
// can be paused, renamed, re-enabled and moved to another zone (no next
// run); only a new cron_expr, as at create, must fire again.
func TestUpdateEndedCronJob(t *testing.T) {
	db, ctx := parallelDB(t)
	wantCode(t, db.CreateJob(ctx, cronJob("0 0 1 1 * 2020")), chronos.EINVALID)
	j := mustCreate(t, db, cronJob("0 0 1 1 * 2099"))
	// Its last occurrence has fired since.
	if _, err := db.Pool.Exec(ctx, "WITH s AS (UPDATE job_schedules SET next_run_at = NULL WHERE job_id = $1) UPDATE jobs SET cron_expr = '0 0 1 1 * 2020' WHERE id = $1", j.ID); err != nil {
		t.Fatal(err)
	}
	for i, u := range []*chronos.JobUpdate{
		{Enabled: chronos.Some(false)},
		{Name: chronos.Some("renamed")},
		{Enabled: chronos.Some(true)},
		{Timezone: chronos.Some("Asia/Tokyo")},
		{CronExpr: chronos.Some("0 0 1 1 * 2020")}, // sent back unchanged
	} {
		up, err := db.UpdateJob(ctx, j.ID, u)
		if err != nil {
			t.Fatalf("update %d of an ended job: %v", i, err)
		}
		if up.NextRunAt != nil {
			t.Fatalf("update %d: next_run_at %v for an ended schedule", i, up.NextRunAt)
		}
	}
	_, err := db.UpdateJob(ctx, j.ID, &chronos.JobUpdate{CronExpr: chronos.Some("0 0 1 1 * 2021")})
	wantCode(t, err, chronos.EINVALID)
	up, err := db.UpdateJob(ctx, j.ID, &chronos.JobUpdate{CronExpr: chronos.Some("0 3 * * *")})
	if err != nil || up.NextRunAt == nil {
		t.Fatalf("new schedule: %+v, %v", up, err)
	}
}

// Walk every job exactly once, in order, while jobs are created and
// deleted concurrently; filters and caps hold.
func TestJobsCursorWalk(t *testing.T) {
	db, ctx := parallelDB(t)
	var ids []int64
	for i := range 120 {
		j := cronJob("0 * * * *")
		j.Enabled = i%3 != 0
		mustCreate(t, db, j)
		ids = append(ids, j.ID)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() { // churn: create new jobs, delete some we do not assert on
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			j := cronJob("0 * * * *")
			if err := db.CreateJob(ctx, j); err != nil {
				t.Error(err)
				return
			}
			if i%2 == 0 {
				if err := db.DeleteJob(ctx, j.ID); err != nil {
					t.Error(err)
					return
				}
			}
		}
	})
	seen := map[int64]int{}
	cursor, last, pages := "", int64(0), 0
	for {
		page, next, err := db.Jobs(ctx, sql.JobFilter{Cursor: cursor, Limit: 7})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(page) > 7 {
			t.Fatalf("page of %d", len(page))
		}
		for _, j := range page {
			if j.ID <= last {
				t.Fatalf("order broken: %d after %d", j.ID, last)
			}
			last = j.ID
			seen[j.ID]++
		}
		if next == "" {
			break
		}
		cursor = next
	}
	close(stop)
	wg.Wait()
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("job %d seen %d times", id, seen[id])
		}
	}
	if pages < 120/7 {
		t.Errorf("%d pages", pages)
	}

	// enabled filter
	page, _, err := db.Jobs(ctx, sql.JobFilter{Enabled: ptr(false), Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range page {
		if j.Enabled {
			t.Fatalf("enabled job %d in enabled=false page", j.ID)
		}
	}
	if len(page) != 40 {
		t.Errorf("%d disabled jobs, want 40", len(page))
	}
	// default and cap
	page, _, err = db.Jobs(ctx, sql.JobFilter{})
	if err != nil || len(page) != 50 {
		t.Fatalf("default limit: %d %v", len(page), err)
	}
	page, _, err = db.Jobs(ctx, sql.JobFilter{Limit: 100000})
	if err != nil || len(page) > 500 {
		t.Fatalf("cap: %d %v", len(page), err)
	}
	for _, bad := range []string{"x", "!!!", "YzE6LTE", "YzI6MQ", "YzE6MDE"} { // c1:-1, c2:1, c1:01
		_, _, err := db.Jobs(ctx, sql.JobFilter{Cursor: bad})
		wantCode(t, err, chronos.EINVALID)
		var ae *chronos.Error
		if !asError(err, &ae) || ae.Fields["cursor"] == "" {
			t.Errorf("cursor %q: %v does not name cursor", bad, err)
		}
	}
}
