//go:build linux

package faults

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// crashFailures reports TestCrash's violations, at most a few of each
// kind in full, and counts the rest.
type crashFailures struct {
	t     *testing.T
	count map[string]int
	order []string
}

const crashShown = 8

func (f *crashFailures) add(kind, format string, args ...any) {
	f.t.Helper()
	if f.count[kind] == 0 {
		f.order = append(f.order, kind)
	}
	f.count[kind]++
	if f.count[kind] <= crashShown {
		f.t.Errorf(kind+": "+format, args...)
	}
}

func (f *crashFailures) summary() {
	f.t.Helper()
	for _, k := range f.order {
		if n := f.count[k]; n > crashShown {
			f.t.Errorf("%s: %d in all (%d shown)", k, n, crashShown)
		}
	}
}

// crashJob is a jobs row as the crash checker reads it.
type crashJob struct {
	id      int64
	name    string
	cron    bool
	misfire string
	created time.Time
}

// check runs TestCrash's invariants (see TestCrash) over the database,
// what the API acknowledged and what the target received. strict: the
// reactor committed synchronously, so no delivery may lack its row and
// no attempt may be delivered twice.
func (r *crashRun) check(t *testing.T, m *monitor, windowEnd time.Time, strict bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := &crashFailures{t: t, count: map[string]int{}}
	defer f.summary()

	jobs := r.loadJobs(t, ctx)
	jobByName := map[string]*crashJob{}
	jobByID := map[int64]*crashJob{}
	for _, j := range jobs {
		jobByName[j.name] = j
		jobByID[j.id] = j
	}
	runs := loadRuns(t, ctx, r.c)
	byID, byJob := indexRuns(runs)
	dels := r.tg.deliveries()
	delivered := map[int64][]jobDelivery{} // by run id
	for _, d := range dels {
		delivered[d.Run] = append(delivered[d.Run], d)
	}
	r.mu.Lock()
	acked := r.acked
	triggered := append([]triggerRec(nil), r.triggered...)
	fails := r.fails
	crashes := r.crashes
	r.mu.Unlock()
	// nearCrash: within the second before a crash.
	nearCrash := func(at time.Time) bool {
		for _, k := range crashes {
			if at.Before(k.at) && k.at.Sub(at) < time.Second {
				return true
			}
		}
		return false
	}

	// 1. What the API acknowledged is there.
	var ackedNearCrash, trigNearCrash int
	deleted := r.ed.deleteSent()
	for id, a := range acked {
		j := jobByID[id]
		if j == nil && deleted[id] {
			continue // deleted on purpose (checkEdits checks the deletes)
		}
		if j == nil || j.name != a.name {
			f.add("acknowledged job lost", "job %d (%s), answered 201 at %s, is not in the database", id, a.name, a.at.Format("15:04:05.000"))
		}
		if nearCrash(a.at) {
			ackedNearCrash++
		}
	}
	for _, tr := range triggered {
		x := byID[tr.Run]
		if x == nil || x.Job != tr.Job || x.Trigger != "manual" {
			f.add("acknowledged trigger lost", "trigger of job %d, answered 202 with run %d at %s: the run is %v", tr.Job, tr.Run, tr.At.Format("15:04:05.000"), x)
		}
		if nearCrash(tr.At) {
			trigNearCrash++
		}
	}

	// 2. One-shots: one run, succeeded, delivered.
	var oneShots int
	for _, j := range jobs {
		if !strings.HasPrefix(j.name, "burst-") && !strings.HasPrefix(j.name, "live-") {
			continue
		}
		oneShots++
		rs := byJob[j.id]
		if len(rs) != 1 {
			f.add("one-shot without exactly one run", "job %d (%s) has %d runs", j.id, j.name, len(rs))
			continue
		}
		x := rs[0]
		if x.Status != "succeeded" || x.Trigger != "schedule" {
			f.add("one-shot run not succeeded", "job %d (%s): run %d is %s (%s)", j.id, j.name, x.ID, x.Status, x.Trigger)
		}
		if !deliveredAs(delivered[x.ID], j.name, x) {
			f.add("one-shot run never delivered", "job %d (%s): run %d (%s) was never received by the target", j.id, j.name, x.ID, x.Status)
		}
	}

	// 3. Crons: no occurrence lost.
	var catchUps, folded int
	for _, id := range r.crons {
		j := jobByID[id]
		rs := byJob[id]
		sort.Slice(rs, func(a, b int) bool { return rs[a].ScheduledAt.Before(rs[b].ScheduledAt) })
		if j == nil || len(rs) == 0 {
			f.add("cron occurrence lost", "cron job %d has no runs", id)
			continue
		}
		if first := rs[0].ScheduledAt; first.After(j.created.Add(3 * time.Second)) {
			f.add("cron occurrence lost", "job %s: first run at %s, created at %s", j.name, first.Format(time.TimeOnly), j.created.Format("15:04:05.000"))
		}
		catchUps += eachOccurrence(rs, func(i int, x *dbRun, gap time.Duration) {
			if x.Trigger != "schedule" {
				f.add("cron run not scheduled", "job %s: run %d is %s", j.name, x.ID, x.Trigger)
			}
			switch {
			case i == 0:
			case gap == time.Second:
			case j.misfire == "all":
				f.add("cron occurrence lost", "job %s (misfire all): no run between %s and %s", j.name,
					rs[i-1].ScheduledAt.Format("15:04:05.000"), x.ScheduledAt.Format("15:04:05.000"))
			case x.CatchUp:
				folded += int(gap/time.Second) - 1
			default:
				f.add("cron occurrence lost", "job %s: %s gap before run %d (%s) without a catch-up run", j.name, gap, x.ID, x.ScheduledAt.Format("15:04:05.000"))
			}
		})
		if last := rs[len(rs)-1].ScheduledAt; last.Before(windowEnd.Add(-2 * time.Second)) {
			f.add("cron occurrence lost", "job %s: last run at %s, but the schedule ran until %s", j.name, last.Format("15:04:05.000"), windowEnd.Format("15:04:05.000"))
		}
	}

	// 4. Leases: none outlived its expiry by more than a reaper interval
	// (plus slack) under a working leader, and nothing is leased now.
	m.mu.Lock()
	overdue, maxLate := append([]string(nil), m.overdue...), m.maxLate
	m.mu.Unlock()
	for _, o := range overdue {
		f.add("lease not reaped", "%s", o)
	}
	var leased int
	if err := r.c.db.Pool.QueryRow(ctx, `SELECT count(*) FROM job_runs WHERE status IN ('leased', 'running')`).Scan(&leased); err != nil || leased > 0 {
		f.add("lease not reaped", "%d runs leased or running after everything settled (err %v)", leased, err)
	}

	// 5. Delivery: every succeeded run received; a received run id names
	// the same job and occurrence in the database, or none.
	statuses := map[string]int{}
	for _, x := range runs {
		statuses[x.Status]++
		if x.Status == "succeeded" {
			j := jobByID[x.Job]
			if j == nil || !deliveredAs(delivered[x.ID], j.name, x) {
				f.add("succeeded run never delivered", "run %d (job %d, %s, %s) succeeded; the target never had it", x.ID, x.Job, x.Trigger, x.ScheduledAt.Format("15:04:05.000"))
			}
		}
	}
	// An occurrence (job, scheduled instant) reaches the target under one
	// run id: the README tells targets to deduplicate on it (and on
	// webhook-id, run_<id>). A run delivered and then lost in the crash,
	// re-created for the same occurrence under a new id, breaks that: the
	// target would act on the occurrence twice.
	type occurrence struct {
		job string
		at  int64 // unix microseconds, the database's precision
	}
	idsOf := map[occurrence]map[int64]bool{}
	var vanished, folded2, repeats, dupRuns int
	var vanishedEx, repeatEx []string
	// inWindow: within a crash's window, where the README allows what a
	// lost reactor commit costs: from 1.5 s before the crash (Postgres
	// flushes an asynchronous commit within 3 × wal_writer_delay, 600 ms,
	// plus slack for the test's view of it) until the server is back (a
	// claim made before the crash may be delivered while it is down).
	inWindow := func(at time.Time) (crashRec, bool) {
		for _, k := range crashes {
			if !at.Before(k.at.Add(-1500*time.Millisecond)) && !at.After(k.up) {
				return k, true
			}
		}
		return crashRec{}, false
	}
	for id, ds := range delivered {
		x := byID[id]
		seen := map[int]jobDelivery{}
		for _, d := range ds {
			o := occurrence{d.Job, d.ScheduledAt.UnixMicro()}
			if idsOf[o] == nil {
				idsOf[o] = map[int64]bool{}
			}
			// A redrive is a new run of the same occurrence by design.
			if !strings.HasPrefix(d.Job, failPrefix) {
				idsOf[o][id] = true
			}
			if prev, dup := seen[d.Attempt]; dup {
				repeats++
				if len(repeatEx) < 3 {
					repeatEx = append(repeatEx, fmt.Sprintf("run %d (%s) attempt %d received again at %s", id, d.Job, d.Attempt, d.At.Format("15:04:05.000")))
				}
				// Documented only as a lost claim: the first delivery in a
				// crash's window, the repeat after that crash.
				if k, ok := inWindow(prev.At); !strict && (!ok || !d.At.After(k.at)) {
					f.add("attempt delivered twice beyond the documented re-delivery",
						"run %d (%s) attempt %d received at %s and again at %s, the first outside any crash's window (crashes at %s)",
						id, d.Job, d.Attempt, prev.At.Format("15:04:05.000"), d.At.Format("15:04:05.000"), crashTimes(crashes))
				}
			}
			seen[d.Attempt] = d
			switch j := jobByName[d.Job]; {
			case x == nil:
				vanished++
				if j == nil || occurrenceRun(byJob[j.id], d.ScheduledAt) == nil {
					folded2++ // gone with its occurrence: folded into a catch-up
					// Documented only for a misfire "one" cron run delivered
					// in a crash's window, whose occurrence a flagged
					// catch-up now stands for.
					_, ok := inWindow(d.At)
					if !strict && (!ok || j == nil || !j.cron || j.misfire != "one" || !foldedInto(byJob[j.id], d.ScheduledAt)) {
						f.add("delivered run lost", "run %d (%s at %s, attempt %d, received %s) is gone from the database, beyond what the README allows (crashes at %s)",
							id, d.Job, d.ScheduledAt.Format("15:04:05.000"), d.Attempt, d.At.Format("15:04:05.000"), crashTimes(crashes))
					}
				}
				if len(vanishedEx) < 3 {
					vanishedEx = append(vanishedEx, fmt.Sprintf("run %d (%s at %s, attempt %d, received %s)", id, d.Job, d.ScheduledAt.Format("15:04:05.000"), d.Attempt, d.At.Format("15:04:05.000")))
				}
			case j == nil || x.Job != j.id || !x.ScheduledAt.Equal(d.ScheduledAt):
				f.add("run id reused", "the target received run %d for %s at %s, but run %d is job %d's at %s: a target deduplicating on the run id would drop one of them",
					id, d.Job, d.ScheduledAt.Format("15:04:05.000000"), id, x.Job, x.ScheduledAt.Format("15:04:05.000000"))
			}
		}
		if len(ds) > 1 {
			dupRuns++
		}
	}
	for o, ids := range idsOf {
		if len(ids) > 1 {
			var list []int64
			for id := range ids {
				list = append(list, id)
			}
			slices.Sort(list)
			f.add("occurrence delivered under two run ids", "%s at %s reached the target as runs %v (now in the database: %v): a target deduplicating on X-Chronos-Run-Id or webhook-id acts on it twice",
				o.job, time.UnixMicro(o.at).UTC().Format("15:04:05.000000"), list, presentRuns(list, byID))
		}
	}
	if strict {
		// With synchronous commits a run is on disk before it is claimed,
		// and its claim before its delivery.
		if folded2 > 0 {
			f.add("delivered run lost", "%d deliveries of runs the database no longer has, e.g. %s", folded2, strings.Join(vanishedEx, "; "))
		}
		if repeats > 0 {
			f.add("attempt delivered twice", "%d deliveries repeated an attempt number of their run, e.g. %s", repeats, strings.Join(repeatEx, "; "))
		}
	}

	t.Logf("acknowledged: %d jobs (%d in the second before a crash), %d triggers (%d in the second before a crash); not acknowledged: %v",
		len(acked), ackedNearCrash, len(triggered), trigNearCrash, fails)
	t.Logf("runs: %d %v; one-shot jobs %d; cron catch-up runs %d standing for %d folded occurrences; deliveries %d, runs delivered more than once %d",
		len(runs), statuses, oneShots, catchUps, folded, len(dels), dupRuns)
	t.Logf("lost reactor commits seen from outside (within what the README allows, else failed above): %d deliveries of runs the crash took (%d of them folded into a catch-up, the rest re-created under a new id), e.g. %s; %d attempt numbers delivered twice, e.g. %s",
		vanished, folded2, strings.Join(vanishedEx, "; "), repeats, strings.Join(repeatEx, "; "))
	t.Logf("most overdue lease under a working leader %s", maxLate.Round(time.Millisecond))
	t.Log(r.checkEdits(t, ctx, f))
	if t.Failed() {
		r.c.dumpLogs(t, 40)
	}
}

// deliveredAs reports whether ds holds a delivery of run x to job name.
func deliveredAs(ds []jobDelivery, name string, x *dbRun) bool {
	for _, d := range ds {
		if d.Job == name && d.ScheduledAt.Equal(x.ScheduledAt) {
			return true
		}
	}
	return false
}

// foldedInto reports whether a flagged catch-up run of rs stands for the
// occurrence at: one scheduled at or after it.
func foldedInto(rs []*dbRun, at time.Time) bool {
	for _, x := range rs {
		if x.CatchUp && !x.ScheduledAt.Before(at) {
			return true
		}
	}
	return false
}

// crashTimes lists when the server crashed and was back.
func crashTimes(ks []crashRec) string {
	var out []string
	for _, k := range ks {
		out = append(out, k.at.Format("15:04:05.000")+".."+k.up.Format("15:04:05.000"))
	}
	return strings.Join(out, ", ")
}

// presentRuns returns those of ids the database has.
func presentRuns(ids []int64, byID map[int64]*dbRun) []int64 {
	var out []int64
	for _, id := range ids {
		if byID[id] != nil {
			out = append(out, id)
		}
	}
	return out
}

// occurrenceRun returns the run of rs scheduled at at, or nil.
func occurrenceRun(rs []*dbRun, at time.Time) *dbRun {
	for _, x := range rs {
		if x.ScheduledAt.Equal(at) {
			return x
		}
	}
	return nil
}

func (r *crashRun) loadJobs(t *testing.T, ctx context.Context) []*crashJob {
	t.Helper()
	return queryAll(t, ctx, r.c, "load jobs", `SELECT id, name, cron_expr IS NOT NULL, misfire, created_at FROM jobs ORDER BY id`,
		func(rows pgx.Rows) (*crashJob, error) {
			j := &crashJob{}
			return j, rows.Scan(&j.id, &j.name, &j.cron, &j.misfire, &j.created)
		})
}
