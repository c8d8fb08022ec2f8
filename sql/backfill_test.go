package sql_test

import (
	"sync"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
)

// A backfill creates one run per occurrence of the range, oldest first,
// trigger backfill, audited; a dry run creates none; a second backfill of
// an overlapping range, even concurrent, creates no second run for an
// occurrence.
func TestBackfillIdempotentAndOrdered(t *testing.T) {
	db, ctx, j := parallelJob(t, "0 * * * *")
	now := dbNow(t, db).Truncate(time.Hour)
	from, to := now.Add(-10*time.Hour), now

	dry, err := db.Backfill(ctx, j.ID, chronos.BackfillRequest{From: from, To: to, DryRun: true})
	if err != nil || len(dry.Occurrences) != 10 || len(dry.Created) != 0 || !dry.DryRun {
		t.Fatalf("dry run: %d occurrences, %d created, %v", len(dry.Occurrences), len(dry.Created), err)
	}
	if n := len(runInstants(t, db, j.ID)); n != 0 {
		t.Fatalf("a dry run created %d runs", n)
	}
	b, err := db.Backfill(ctx, j.ID, chronos.BackfillRequest{From: from, To: to})
	if err != nil || len(b.Created) != 10 || len(b.Existing) != 0 {
		t.Fatalf("backfill: %d created, %d existing, %v", len(b.Created), len(b.Existing), err)
	}
	for i, r := range b.Created {
		if r.Trigger != chronos.TriggerBackfill || !r.ScheduledAt.Equal(from.Add(time.Duration(i)*time.Hour)) {
			t.Fatalf("run %d: %s at %s", i, r.Trigger, r.ScheduledAt)
		}
		if i > 0 && r.ID <= b.Created[i-1].ID {
			t.Fatalf("run ids not in order of occurrence: %d after %d", r.ID, b.Created[i-1].ID)
		}
	}
	// Overlapping ranges, twice at once: only the two new occurrences get
	// a run, once.
	var wg sync.WaitGroup
	results := make([]int, 2)
	for k := range 2 {
		wg.Go(func() {
			b, err := db.Backfill(ctx, j.ID, chronos.BackfillRequest{From: now.Add(-12 * time.Hour), To: now.Add(-5 * time.Hour)})
			if err != nil {
				t.Errorf("second backfill: %v", err)
			}
			results[k] = len(b.Created)
		})
	}
	wg.Wait()
	if results[0]+results[1] != 2 {
		t.Fatalf("overlapping backfills created %v runs, want 2 in all", results)
	}
	for at, n := range runInstants(t, db, j.ID) {
		if n != 1 {
			t.Fatalf("occurrence %s has %d runs", at, n)
		}
	}
	hist, _, err := db.History(ctx, j.ID, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	backfills := 0
	for _, e := range hist {
		if e.Action == chronos.AuditBackfill {
			backfills++
		}
	}
	if backfills != 3 {
		t.Fatalf("%d backfill audit entries, want 3", backfills)
	}
}

// A scheduled run's occurrence is not backfilled again; the limits are
// 400s naming the field.
func TestBackfillLimits(t *testing.T) {
	db, ctx, j := parallelJob(t, "* * * * *")
	now := dbNow(t, db).Truncate(time.Minute)
	_, err := db.Backfill(ctx, j.ID, chronos.BackfillRequest{From: now.Add(-24 * time.Hour), To: now})
	if fieldOf(err, "to") == "" {
		t.Fatalf("1,440 occurrences: %v", err)
	}
	// A to after now is now: the schedule runs the future. Now is the
	// database's at the call, which may be a minute past the one truncated
	// above (a loaded run crossed it): count the occurrences up to b.To.
	from := now.Add(-2 * time.Minute)
	b, err := db.Backfill(ctx, j.ID, chronos.BackfillRequest{From: from, To: now.Add(time.Hour), DryRun: true})
	want := 0
	for at := from; at.Before(b.To); at = at.Add(time.Minute) {
		want++
	}
	if err != nil || len(b.Occurrences) != want || want < 2 || b.To.After(dbNow(t, db)) {
		t.Fatalf("a to after now: %d occurrences (want %d), to %s, %v", len(b.Occurrences), want, b.To, err)
	}
	_, err = db.Backfill(ctx, j.ID, chronos.BackfillRequest{To: now})
	if fieldOf(err, "from") == "" {
		t.Fatalf("no from: %v", err)
	}
	_, err = db.Backfill(ctx, 1<<40, chronos.BackfillRequest{From: now.Add(-time.Hour), To: now})
	wantCode(t, err, chronos.ENOTFOUND)
	oneShot := cronJob("")
	oneShot.RunAt = ptr(now.Add(time.Hour))
	one := mustCreate(t, db, oneShot)
	_, err = db.Backfill(ctx, one.ID, chronos.BackfillRequest{From: now.Add(-time.Hour), To: now})
	wantCode(t, err, chronos.EINVALID)

	// A scheduled run stands for its occurrence.
	at := now.Add(-3 * time.Minute)
	insertScheduled(t, db, j.ID, at)
	b, err = db.Backfill(ctx, j.ID, chronos.BackfillRequest{From: now.Add(-5 * time.Minute), To: now})
	if err != nil || len(b.Created) != 4 || len(b.Existing) != 1 || !b.Existing[0].Equal(at) {
		t.Fatalf("backfill around a scheduled run: %d created, existing %v, %v", len(b.Created), b.Existing, err)
	}
}

// Backfill follows the calendars: a skipped date gets no run and is
// listed.
func TestBackfillSkipsCalendarDates(t *testing.T) {
	db, ctx := parallelDB(t)
	now := dbNow(t, db)
	day := now.AddDate(0, 0, -3)
	putCalendar(t, db, "closed", day.Format("2006-01-02"))
	j := cronJob("0 6 * * *")
	j.Calendars = []string{"closed"}
	mustCreate(t, db, j)
	start := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, -5)
	b, err := db.Backfill(ctx, j.ID, chronos.BackfillRequest{From: start, To: start.AddDate(0, 0, 5)})
	if err != nil || len(b.Created) != 4 || len(b.Skipped) != 1 || b.Skipped[0].Calendar != "closed" {
		t.Fatalf("backfill: %d created, skipped %+v, %v", len(b.Created), b.Skipped, err)
	}
}

// A job behind its schedule: the occurrences from its next_run_at on are
// the materializer's (listed as existing, not created), each listed once
// even when a run stands for it already.
func TestBackfillOfAJobBehindListsEachOccurrenceOnce(t *testing.T) {
	db, ctx, j := parallelJob(t, "0 * * * *")
	now := dbNow(t, db).Truncate(time.Hour)
	setNextRunAt(t, db, j.ID, ptr(now.Add(-3*time.Hour)))
	insertScheduled(t, db, j.ID, now.Add(-2*time.Hour))
	b, err := db.Backfill(ctx, j.ID, chronos.BackfillRequest{From: now.Add(-5 * time.Hour), To: now})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Created) != 2 || len(b.Existing) != 3 {
		t.Fatalf("created %d, existing %v: want 2 created (before next_run_at) and the 3 from it on, once each", len(b.Created), b.Existing)
	}
	seen := map[time.Time]bool{}
	for _, at := range b.Existing {
		if seen[at] {
			t.Fatalf("occurrence %s listed twice as existing: %v", at, b.Existing)
		}
		seen[at] = true
	}
}
