package faults

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/chronoshq/chronos/internal/instant"
)

// The invariants of delivery control (issue 24), over the same data as
// the others (model_check_test.go). Calendars need no check of their own:
// a calendar PUT is a new version of every job naming it (putCalendar),
// so checkSchedule holds each run to the plan in force at its instant,
// calendars applied, and every change to "no occurrence lost or doubled"
// by the rule of a PATCH of the schedule.

// checkDeliveryControl runs the limit (concurrency and rate) and
// backfill invariants.
func (s *seqRun) checkDeliveryControl(d *checkData) {
	s.checkLimits(d)
	s.checkRates(d)
	s.checkBackfills(d)
	s.checkBackfillFlag(d)
	s.checkOneRunPerOccurrence(d)
}

// limitKeyOf returns the key a delivery was leased under when that is
// certain: its run's key (that of its last lease) is the one its job
// named throughout the run's life, so no PATCH moved it.
func (s *seqRun) limitKeyOf(d *checkData, x mdelivery) (string, bool) {
	r := d.byID[x.Run]
	if r == nil || r.LimitKey == nil {
		return "", false
	}
	j := s.byID[r.Job]
	if j == nil {
		return "", false
	}
	states := j.statesBetween(r.Created.Add(-modelTol), x.At)
	if len(states) == 0 || slices.ContainsFunc(states, func(st jobState) bool { return st.LimitKey != *r.LimitKey }) {
		return "", false
	}
	return *r.LimitKey, true
}

// limitBound is the most runs of the key a limit allowed in flight at
// some moment of [a, b]: the largest max_concurrency among the limit's
// versions that may have been in force then (the larger of old and new
// across a change: runs leased under the old one finish under it). ok
// is false when at some moment there may have been no concurrency limit
// (none declared yet, deleted, or only a rate).
func (dm *deliveryModel) limitBound(key string, a, b time.Time) (bound int, ok bool) {
	vs := dm.limits[key]
	if len(vs) == 0 || vs[0].sent.Add(-modelTol).After(a) {
		return 0, false
	}
	for i, v := range vs {
		end := time.Time{}
		if i+1 < len(vs) {
			end = vs[i+1].recv.Add(modelTol)
		}
		if !v.sent.Add(-modelTol).Before(b) || !end.IsZero() && !end.After(a) {
			continue
		}
		if !v.exists || v.max == nil {
			return 0, false
		}
		bound = max(bound, *v.max)
	}
	return bound, bound > 0
}

// checkLimits: a limit is never exceeded at the target. At no instant
// does the target see more requests of one key in flight than the
// key's max_concurrency in force, a request counting from its arrival to
// the moment the target began its answer (the worker cannot have ended
// the attempt before that).
//
// Left out, as the runs stop counting there by design: a request the
// client gave up on (killed, or stopped past its grace: the run is taken
// back or handed back while the target may still hold the request), and
// one whose worker the model froze (SIGSTOP) meanwhile (its lease may
// expire and the reaper take the run back). Deliveries whose key is not
// certain (limitKeyOf) are left out too: leaving requests out never
// makes a violation.
func (s *seqRun) checkLimits(d *checkData) {
	byKey := map[string][]mdelivery{}
	for _, x := range d.dels {
		if k, ok := s.limitKeyOf(d, x); ok {
			byKey[k] = append(byKey[k], x)
			s.fig.limited++
		}
	}
	for _, key := range slices.Sorted(maps.Keys(byKey)) {
		ds := byKey[key]
		reported := 0
		for b, B := range ds {
			var in []mdelivery
			from := B.At
			for _, A := range ds[:b] {
				if A.Aborted || !A.Answered.After(B.At) || s.workerFrozen(d, A, A.At, A.Answered) {
					continue
				}
				in = append(in, A)
				from = instant.Earlier(from, A.At)
			}
			// A run in flight was leased up to a moment before its request
			// arrived: the limit in force from a second before the
			// earliest of them.
			bound, ok := s.dc.limitBound(key, from.Add(-time.Second), B.At)
			if ok && len(in)+1 == bound && len(in) > 0 {
				s.fig.atLimit++ // the key full at the target: the check had something to hold
			}
			if !ok || len(in)+1 <= bound {
				continue
			}
			if reported++; reported > 3 {
				continue
			}
			var ins []string
			for _, A := range in {
				ins = append(ins, fmt.Sprintf("%s run %d attempt %d %s..%s", A.Key, A.Run, A.Attempt,
					A.At.Format("15:04:05.000"), A.Answered.Format("15:04:05.000")))
			}
			s.violate("limit-exceeded", "limit %s (at most %d in flight; %s): %s run %d attempt %d arrived at %s while %d of the key were in flight: %s",
				key, bound, s.limitHistory(key), B.Key, B.Run, B.Attempt, B.At.Format("15:04:05.000"), len(in), strings.Join(ins, "; "))
		}
	}
}

// workerFrozen reports whether the worker of a delivery's attempt was
// frozen (SIGSTOP) by the model at some moment of [from, to].
func (s *seqRun) workerFrozen(d *checkData, x mdelivery, from, to time.Time) bool {
	a := d.atts[x.Run][x.Attempt]
	return a != nil && s.frozen(a.Worker, from, to)
}

// limitHistory is a limit's versions, for messages.
func (s *seqRun) limitHistory(key string) string {
	var hs []string
	for _, v := range s.dc.limits[key] {
		hs = append(hs, fmt.Sprintf("%s..%s %s", v.sent.Format("15:04:05.000"), v.recv.Format("15:04:05.000"), v))
	}
	return "history: " + strings.Join(hs, " | ")
}

// checkBackfills: each backfill answered what the job's plan holds in
// its range (the occurrences in [from, to), to taken as now when later;
// the created runs and those that existed make up the list), every run
// it created is in the database, flagged backfill, and reached the target
// (nothing lost: held by a limit or an overlap lock, it is delivered once
// they allow); and a backfill's runs arrive oldest first.
func (s *seqRun) checkBackfills(d *checkData) {
	for _, b := range s.dc.backfills {
		j := b.job
		s.checkBackfillAnswer(b)
		if b.dry || j.deleted || j.id == 0 {
			continue
		}
		s.fig.backfilled += len(b.ans.Created)
		for _, c := range b.ans.Created {
			r := d.byID[c.ID]
			switch {
			case r == nil:
				s.violate("backfill-lost", "job %s: backfill run %d (occurrence %s) is not in job_runs", j.key, c.ID, c.ScheduledAt.Format("15:04:05.000"))
			case r.Trigger != "backfill" || r.Job != j.id || !r.Sched.Equal(c.ScheduledAt):
				s.violate("backfill-lost", "job %s: backfill answered run %d for occurrence %s, job_runs has %s of job %d", j.key, c.ID,
					c.ScheduledAt.Format("15:04:05.000"), r, r.Job)
			case len(d.delRun[r.ID]) == 0 && r.Status != "dead":
				s.violate("backfill-lost", "job %s: backfill %s never reached the target (%s)", j.key, r, s.runDesc(d, r.ID))
			}
		}
		s.checkBackfillOrder(d, b)
	}
}

// checkBackfillAnswer holds a backfill's answer to the job's plan as the
// model knows it, when one version was surely in force throughout the
// call: its occurrences before the call was sent are exactly the plan's
// in [from, to), and none lies past what the plan holds up to its answer
// (to is taken as the database's now, somewhere in the call).
func (s *seqRun) checkBackfillAnswer(b *mbackfill) {
	j, a := b.job, b.ans
	var listed []time.Time
	listed = append(listed, a.Existing...)
	for _, c := range a.Created {
		listed = append(listed, c.ScheduledAt)
	}
	sort.Slice(listed, func(x, y int) bool { return listed[x].Before(listed[y]) })
	switch {
	case b.dry && len(a.Created) > 0:
		s.violate("backfill-answer", "job %s: a dry run created %d runs", j.key, len(a.Created))
	case b.dry:
		// A dry run lists what exists; the rest it would create.
		if slices.ContainsFunc(listed, func(t time.Time) bool { return !slices.ContainsFunc(a.Occurrences, t.Equal) }) {
			s.violate("backfill-answer", "job %s: dry run [%s, %s): existing %v are not all among the occurrences %v",
				j.key, b.from.Format("15:04:05"), b.to.Format("15:04:05"), fmtTimes(listed), fmtTimes(a.Occurrences))
		}
	case !slices.EqualFunc(listed, a.Occurrences, time.Time.Equal):
		s.violate("backfill-answer", "job %s: backfill [%s, %s): created and existing %v are not the occurrences %v",
			j.key, b.from.Format("15:04:05"), b.to.Format("15:04:05"), fmtTimes(listed), fmtTimes(a.Occurrences))
	}
	v, ok := j.at(b.sent)
	w, ok2 := j.at(b.recv)
	if !ok || !ok2 || v.sent != w.sent || j.uncertain {
		return
	}
	sure := instant.Earlier(b.to, b.sent.Add(-modelTol))
	want := v.st.occurrences(b.from.Add(-time.Nanosecond), sure)
	var got []time.Time
	for _, o := range a.Occurrences {
		if o.Before(sure) {
			got = append(got, o)
		}
		if !v.st.occurs(o) || o.Before(b.from) || !o.Before(b.to) || o.After(b.recv.Add(modelTol)) {
			s.violate("backfill-off-schedule", "job %s: backfill [%s, %s) lists %s, no occurrence of %s in the range up to its answer at %s",
				j.key, b.from.Format("15:04:05"), b.to.Format("15:04:05"), o.Format("15:04:05.000"), v.st, b.recv.Format("15:04:05.000"))
		}
	}
	if !slices.EqualFunc(got, want, time.Time.Equal) {
		s.violate("backfill-missing", "job %s: backfill [%s, %s) sent at %s lists %v before then, the plan %s has %v",
			j.key, b.from.Format("15:04:05"), b.to.Format("15:04:05"), b.sent.Format("15:04:05.000"), fmtTimes(got), v.st, fmtTimes(want))
	}
}

// checkBackfillOrder: a backfill's runs reach the target oldest first
// (their first requests, in the order of their occurrences). Under skip
// or queue_one they run one at a time, so the order is strict; under
// allow they start oldest first as workers are free, on three instances
// at once, so a younger run may arrive up to 300 ms before an older one.
// Left out: a run whose first attempt did not reach the target (lost with
// a killed or stopped worker, taken back later), and a backfill during
// which the model stopped, killed or froze an instance.
func (s *seqRun) checkBackfillOrder(d *checkData, b *mbackfill) {
	j := b.job
	type first struct {
		r *mrun
		x mdelivery
	}
	var fs []first
	end := b.recv
	for _, c := range b.ans.Created {
		r := d.byID[c.ID]
		if r == nil || len(d.delRun[r.ID]) == 0 {
			continue
		}
		x := d.delRun[r.ID][0]
		end = instant.Later(end, x.At)
		if x.Attempt == 1 {
			fs = append(fs, first{r, x})
		}
	}
	if s.stoppedWithin(b.sent.Add(-time.Second), end) {
		return
	}
	tol := 300 * time.Millisecond
	if !slices.ContainsFunc(j.statesBetween(b.sent, end), func(st jobState) bool { return st.Overlap == "allow" }) {
		tol = 0
	}
	sort.Slice(fs, func(x, y int) bool { return fs[x].r.Sched.Before(fs[y].r.Sched) })
	for i := 1; i < len(fs); i++ {
		older := fs[i-1]
		for _, younger := range fs[i:] {
			if younger.x.At.Add(tol).Before(older.x.At) {
				s.violate("backfill-order", "job %s: backfill [%s, %s): %s first arrived at %s, before the older %s at %s",
					j.key, b.from.Format("15:04:05"), b.to.Format("15:04:05"), younger.r, younger.x.At.Format("15:04:05.000"),
					older.r, older.x.At.Format("15:04:05.000"))
				return
			}
		}
	}
}

// stoppedWithin reports whether the model stopped, killed or froze an
// instance at some moment of [from, to].
func (s *seqRun) stoppedWithin(from, to time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.stops {
		end := instant.Later(st.at, st.thawed)
		if !st.at.After(to) && !end.Before(from) {
			return true
		}
	}
	return false
}

// checkBackfillFlag: every request of a backfilled run carries
// X-Chronos-Backfill: true, and no other request carries it.
func (s *seqRun) checkBackfillFlag(d *checkData) {
	bad := 0
	for _, x := range d.dels {
		r := d.byID[x.Run]
		if r == nil {
			continue
		}
		if want := r.Trigger == "backfill"; want != (x.Backfill == "true") || !want && x.Backfill != "" {
			if bad++; bad <= 5 {
				s.violate("backfill-flag", "job %s: %s attempt %d arrived with X-Chronos-Backfill %q", s.jobName(r.Job), r, x.Attempt, x.Backfill)
			}
		}
	}
}

// checkOneRunPerOccurrence: an occurrence, (job, scheduled_at), has at
// most one run, scheduled or backfilled, across backfills of overlapping
// ranges and the schedule (two scheduled runs of one occurrence are
// checkSchedule's "duplicate-occurrence").
func (s *seqRun) checkOneRunPerOccurrence(d *checkData) {
	for _, job := range slices.Sorted(maps.Keys(d.byJob)) {
		by := map[int64][]*mrun{}
		for _, r := range d.byJob[job] {
			if r.Trigger == "schedule" || r.Trigger == "backfill" {
				by[r.Sched.UnixMicro()] = append(by[r.Sched.UnixMicro()], r)
			}
		}
		for _, at := range slices.Sorted(maps.Keys(by)) {
			rs := by[at]
			if len(rs) > 1 && slices.ContainsFunc(rs, func(r *mrun) bool { return r.Trigger == "backfill" }) {
				s.violate("backfill-duplicate", "job %s: %d runs for occurrence %s: %v", s.jobName(job), len(rs),
					time.UnixMicro(at).UTC().Format("15:04:05.000"), rs)
			}
		}
	}
}

// backfillActive reports whether a backfilled run of the job was active
// (created, not yet finished) at some moment of [from, to].
func backfillActive(d *checkData, j *mjob, from, to time.Time) bool {
	for _, r := range d.byJob[j.id] {
		if r.Trigger == "backfill" && r.Created.Before(to) && (r.Finished == nil || r.Finished.After(from)) {
			return true
		}
	}
	return false
}

func fmtTimes(ts []time.Time) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.UTC().Format("15:04:05")
	}
	return out
}
