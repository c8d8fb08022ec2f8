package sql_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

func putCalendar(t testing.TB, db *sql.DB, name string, dates ...string) *chronos.Calendar {
	t.Helper()
	c := &chronos.Calendar{Name: name, Dates: dates}
	if dates == nil {
		c.Dates = []string{}
	}
	if _, err := db.PutCalendar(context.Background(), c); err != nil {
		t.Fatalf("put calendar %s: %v", name, err)
	}
	return c
}

func TestCalendarCRUDAndReferences(t *testing.T) {
	db, ctx := parallelDB(t)
	c := &chronos.Calendar{Name: "us-holidays", Description: "US", Dates: []string{"2026-12-25", "2026-01-01", "2026-12-25"}}
	created, err := db.PutCalendar(ctx, c)
	if err != nil || !created {
		t.Fatalf("put: %v %v", created, err)
	}
	if created, err = db.PutCalendar(ctx, c); err != nil || created {
		t.Fatalf("put again: %v %v", created, err)
	}
	got, err := db.Calendar(ctx, "us-holidays")
	if err != nil || len(got.Dates) != 2 || got.Dates[0] != "2026-01-01" || got.Description != "US" {
		t.Fatalf("get: %+v %v", got, err)
	}
	_, err = db.Calendar(ctx, "nope")
	wantCode(t, err, chronos.ENOTFOUND)

	// A job naming a calendar that does not exist is a 400 naming calendars.
	bad := cronJob("0 9 * * *")
	bad.Calendars = []string{"nope"}
	err = db.CreateJob(ctx, bad)
	wantCode(t, err, chronos.EINVALID)
	if fieldOf(err, "calendars") == "" {
		t.Fatalf("error %v does not name calendars", err)
	}
	j := cronJob("0 9 * * *")
	j.Calendars, j.CalendarPolicy = []string{"us-holidays"}, chronos.CalendarNextBusinessDay
	mustCreate(t, db, j)
	stored, err := db.Job(ctx, j.ID)
	if err != nil || len(stored.Calendars) != 1 || stored.CalendarPolicy != chronos.CalendarNextBusinessDay {
		t.Fatalf("stored job: %+v %v", stored, err)
	}
	list, err := db.Calendars(ctx)
	if err != nil || len(list) != 1 || list[0].Jobs != 1 {
		t.Fatalf("list: %+v %v", list, err)
	}
	// In use: 409.
	wantCode(t, db.DeleteCalendar(ctx, "us-holidays"), chronos.ECONFLICT)
	// Batch creates resolve calendars too.
	b1, b2 := cronJob("0 9 * * *"), cronJob("0 9 * * *")
	b1.Calendars, b2.Calendars = []string{"us-holidays"}, []string{"missing"}
	err = db.CreateJobs(ctx, []*chronos.Job{b1, b2})
	if fieldOf(err, "jobs[1].calendars") == "" {
		t.Fatalf("batch error %v", err)
	}
	// Taking the calendar off the job frees it.
	after, err := db.UpdateJob(ctx, j.ID, &chronos.JobUpdate{Calendars: chronos.Opt[[]string]{Set: true, Null: true}})
	if err != nil || len(after.Calendars) != 0 || after.CalendarPolicy != chronos.CalendarSkip {
		t.Fatalf("patch: %+v %v", after, err)
	}
	if err := db.DeleteCalendar(ctx, "us-holidays"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, db.DeleteCalendar(ctx, "us-holidays"), chronos.ENOTFOUND)
}

// fieldOf is the message an EINVALID gives a field.
func fieldOf(err error, field string) string {
	var e *chronos.Error
	if !errors.As(err, &e) {
		return ""
	}
	return e.Fields[field]
}

// runInstants returns the scheduled_at of a job's runs, by instant, with
// the number of runs at each.
func runInstants(t testing.TB, db *sql.DB, jobID int64) map[time.Time]int {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), "SELECT scheduled_at FROM job_runs WHERE job_id = $1", jobID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[time.Time]int{}
	for rows.Next() {
		var at time.Time
		if err := rows.Scan(&at); err != nil {
			t.Fatal(err)
		}
		out[at.UTC()]++
	}
	return out
}

// The materializer skips the occurrences on a calendar date, counted with
// reason calendar.
func TestCalendarSkipCounted(t *testing.T) {
	db, ctx := parallelDB(t)
	now := dbNow(t, db)
	d2 := now.AddDate(0, 0, 2)
	putCalendar(t, db, "closed", d2.Format("2006-01-02"))
	j := cronJob("0 12 * * *")
	j.Calendars = []string{"closed"}
	mustCreate(t, db, j)
	res, err := db.Materialize(ctx, time.Time{}, 4*24*time.Hour, 100)
	if err != nil {
		t.Fatal(err)
	}
	if res.Missed[j.ID][chronos.SkipCalendar] != 1 || res.Created < 3 {
		t.Fatalf("created %d, missed %v", res.Created, res.Missed[j.ID])
	}
	noon := time.Date(d2.Year(), d2.Month(), d2.Day(), 12, 0, 0, 0, time.UTC)
	if runInstants(t, db, j.ID)[noon] != 0 {
		t.Fatalf("a run on the closed date %s", noon)
	}
}

// A change of a calendar re-plans the runs created ahead of the jobs that
// name it, by the rule of a PATCH: none lost, none doubled.
func TestCalendarReplan(t *testing.T) {
	db, ctx := parallelDB(t)
	now := dbNow(t, db)
	today, tomorrow := now.Format("2006-01-02"), now.AddDate(0, 0, 1).Format("2006-01-02")
	putCalendar(t, db, "closed")
	j := cronJob("*/5 * * * *")
	j.Calendars = []string{"closed"}
	mustCreate(t, db, j)

	// An hour ahead: twelve runs, one per occurrence.
	const lookahead = time.Hour
	res, err := db.Materialize(ctx, time.Time{}, lookahead, 100)
	if err != nil {
		t.Fatal(err)
	}
	if res.Created < 11 {
		t.Fatalf("created %d runs ahead", res.Created)
	}
	// Every date of the hour ahead is closed now: the runs ahead go.
	putCalendar(t, db, "closed", today, tomorrow)
	if n := len(runInstants(t, db, j.ID)); n != 0 {
		// Runs already due (available_at <= now) stay; none should be here
		// as all were ahead of the clock a moment ago, bar the one at a
		// boundary the clock just crossed.
		if n > 1 {
			t.Fatalf("%d runs left after the calendar closed every date", n)
		}
	}
	res, err = db.Materialize(ctx, time.Time{}, lookahead, 100)
	if err != nil {
		t.Fatal(err)
	}
	if res.Created != 0 {
		t.Fatalf("with the dates closed: created %d", res.Created)
	}
	// Open again: the plan comes back, each occurrence once.
	putCalendar(t, db, "closed")
	if _, err := db.Materialize(ctx, time.Time{}, lookahead, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Materialize(ctx, time.Time{}, lookahead, 100); err != nil {
		t.Fatal(err)
	}
	runs := runInstants(t, db, j.ID)
	later := dbNow(t, db)
	sched, _ := (&chronos.Job{CronExpr: j.CronExpr, Timezone: "UTC"}).Schedule()
	for x, ok := sched.Next(later.Add(time.Second)); ok && x.Before(later.Add(lookahead-time.Minute)); x, ok = sched.Next(x) {
		if runs[x] != 1 {
			t.Fatalf("occurrence %s has %d runs (runs %v)", x, runs[x], runs)
		}
	}
	for at, n := range runs {
		if n != 1 {
			t.Fatalf("occurrence %s has %d runs", at, n)
		}
	}
}
