package sql

import (
	"time"

	"github.com/chronoshq/chronos"
)

// occurrence is one run the materializer will insert.
type occurrence struct {
	at      time.Time // the nominal instant: scheduled_at
	fireAt  time.Time // at plus the job's jitter: available_at
	catchUp bool
}

// jobPlan is what materializing one job does: the runs to insert, the
// occurrences skipped by its overlap policy, those not run for another
// reason (by reason: excluded, misfire, deadline), and its new
// next_run_at.
type jobPlan struct {
	runs    []occurrence
	skipped int
	missed  map[string]int
	next    *time.Time
}

func (p *jobPlan) miss(reason string, n int) {
	if n <= 0 {
		return
	}
	if p.missed == nil {
		p.missed = map[string]int{}
	}
	p.missed[reason] += n
}

// maxCounted bounds the occurrences counted one by one for one gap or one
// excluded range: the counts feed metrics and events, and a per-second
// schedule down for a day must not stall the leader.
const maxCounted = 10000

// plan decides a job's runs from its next_run_at, pure of the database:
// now is the materializer's clock, horizon = now + lookahead,
// active/pending say whether the job has an active / a pending run, and
// gap, when not zero, is the instant of the job's catch-up run (see
// gapOf), handled by its misfire policy. Occurrences come from the job's
// chronos.Schedule, the code the previews use, so what a preview shows is
// what this creates.
func plan(j *chronos.Job, now, horizon time.Time, active, pending bool, gap time.Time) jobPlan {
	var p jobPlan
	if j.NextRunAt == nil {
		return p
	}
	// take decides one occurrence: insert it, skip it (counted, and the
	// schedule moves past it), or stop (hold it until it is due).
	take := func(o occurrence) (stop bool) {
		o.fireAt = j.FireAt(o.at)
		if d := j.StartingDeadlineSeconds; d != nil && now.After(o.fireAt.Add(time.Duration(*d)*time.Second)) {
			p.miss(chronos.SkipDeadline, 1) // too late to start: missed, not run
			return false
		}
		blocked := false
		switch j.Overlap {
		case chronos.OverlapSkip:
			blocked = active
		case chronos.OverlapQueueOne:
			blocked = pending
		}
		if !blocked {
			p.runs = append(p.runs, o)
			active, pending = true, true
			return false
		}
		if o.at.After(now) {
			return true // decide when it is due: the active run may be done by then
		}
		p.skipped++
		return false
	}

	t := j.NextRunAt.UTC()
	if j.CronExpr == nil { // one-shot: once, then done
		if take(occurrence{at: t}) {
			p.next = &t
		}
		return p
	}
	sched, err := j.Schedule()
	if err != nil {
		return p // a stored schedule that no longer builds: nothing to fire
	}
	catchUp := false
	if !gap.IsZero() {
		var ok bool
		switch j.Misfire {
		case chronos.MisfireNone:
			p.miss(chronos.SkipMisfire, countOccurrences(sched, t, now))
			if t, ok = sched.Next(now); !ok {
				return p
			}
		case chronos.MisfireAll:
			recent, older := recentOccurrences(sched, t, now, chronos.MaxMisfireRuns)
			p.miss(chronos.SkipMisfire, older)
			for _, at := range recent {
				take(occurrence{at: at, catchUp: true}) // all due: never held
			}
			if t, ok = sched.Next(now); !ok {
				return p
			}
		default:
			t, catchUp = gap, true
		}
	}
	for range maxOccurrencesPerJob {
		if t.After(horizon) || take(occurrence{at: t, catchUp: catchUp}) {
			break
		}
		next, passed, ok := sched.Advance(t)
		p.miss(chronos.SkipExcluded, passed.Excluded)
		p.miss(chronos.SkipCalendar, passed.Calendar)
		if !ok {
			return p // no further occurrence: next_run_at becomes null, the job is finished
		}
		t, catchUp = next, false
	}
	p.next = &t
	return p
}

// gapOf decides whether the cron job j has a gap at now and, if so,
// returns the instant of its one catch-up run: the latest occurrence due.
// stale is how many of its runs created ahead are due and have not
// started.
//
// A job is behind when its next_run_at is not after now: the materializer
// keeps it a lookahead ahead while a leader runs, so only a time without a
// leader (or without any instance, or with a leader that created no run:
// stalled for longer than the lookahead) leaves it behind. A job behind with
// more than one occurrence due in all, counting the runs created ahead
// before the gap that never started, has a gap: one catch-up run stands
// for them all (misfire "one"; "none" and "all" decide otherwise, see
// plan). A job merely one occurrence late is not a gap; and a backlog of
// runs that the workers have not reached yet is none either, since the
// materializer kept the job ahead meanwhile.
func gapOf(j *chronos.Job, now time.Time, stale int) time.Time {
	if j.CronExpr == nil || j.NextRunAt == nil || j.NextRunAt.After(now) {
		return time.Time{} // the common case: not behind, no schedule to build
	}
	sched, err := j.Schedule()
	if err != nil {
		return time.Time{}
	}
	first := j.NextRunAt.UTC()
	n1, ok := sched.Next(first)
	if !ok || n1.After(now) {
		// One occurrence not yet created is due.
		if stale == 0 {
			return time.Time{}
		}
		return first
	}
	return latestOccurrence(sched, n1, now)
}

// latestOccurrence returns the last occurrence at or before now, given
// one (from) that is. It probes back from now with doubling windows until
// one holds an occurrence, then walks forward, so its cost follows the
// schedule's spacing near now, not the length of the gap.
func latestOccurrence(sched *chronos.Schedule, from, now time.Time) time.Time {
	c := from
	for d := time.Second; ; d *= 2 {
		start := now.Add(-d)
		if !start.After(c) {
			break
		}
		x, ok := sched.Next(start)
		if !ok {
			break
		}
		if !x.After(now) {
			c = x
			break
		}
	}
	for range 1 << 20 {
		x, ok := sched.Next(c)
		if !ok || x.After(now) {
			break
		}
		c = x
	}
	return c
}

// countOccurrences counts the occurrences from `from` (one) up to now,
// at most maxCounted.
func countOccurrences(sched *chronos.Schedule, from, now time.Time) int {
	n := 0
	for t, ok := from, true; ok && !t.After(now) && n < maxCounted; t, ok = sched.Next(t) {
		n++
	}
	return n
}

// recentOccurrences returns the latest n occurrences in [from, now], in
// order (from is one), and how many earlier ones there are (at most
// maxCounted). It finds where the last n start by probing back from now
// with doubling windows, so its cost does not grow with the gap.
func recentOccurrences(sched *chronos.Schedule, from, now time.Time, n int) ([]time.Time, int) {
	start := from.Add(-time.Nanosecond) // the window (start, now]
	for d := time.Second; ; d *= 2 {
		s := now.Add(-d)
		if !s.After(from) {
			break
		}
		if k := len(within(sched, s, now, n)); k >= n {
			start = s
			break
		}
	}
	var ring []time.Time
	for t, ok := sched.Next(start); ok && !t.After(now); t, ok = sched.Next(t) {
		ring = append(ring, t)
		if len(ring) > 4*n { // keep memory bounded on a dense window
			ring = append(ring[:0], ring[len(ring)-n:]...)
		}
	}
	if len(ring) > n {
		ring = ring[len(ring)-n:]
	}
	older := 0
	if len(ring) > 0 {
		for t, ok := from, true; ok && t.Before(ring[0]) && older < maxCounted; t, ok = sched.Next(t) {
			older++
		}
	}
	return ring, older
}

// within returns up to n occurrences in (after, now].
func within(sched *chronos.Schedule, after, now time.Time, n int) []time.Time {
	var out []time.Time
	for t, ok := sched.Next(after); ok && !t.After(now) && len(out) < n; t, ok = sched.Next(t) {
		out = append(out, t)
	}
	return out
}

// earlyAt is the materialize_at to store with p.next (see EarlyLookahead):
// when the run of the next occurrence may be created ahead of the
// lookahead. That is for a cron job whose plan created a run, when its next
// occurrence comes more than the lookahead after that run's: then as soon
// as that run's occurrence is due, and at most EarlyLookahead ahead. Nil
// (the lookahead alone) otherwise: a frequent schedule, a one-shot, a job
// whose occurrence was held back, skipped or missed in this call.
func (p jobPlan) earlyAt(j *chronos.Job, lookahead time.Duration) *time.Time {
	if j.CronExpr == nil || p.next == nil || len(p.runs) == 0 {
		return nil
	}
	last := p.runs[len(p.runs)-1].at
	lead := min(p.next.Sub(last), EarlyLookahead)
	if lead <= lookahead {
		return nil
	}
	at := p.next.Add(-lead)
	return &at
}

// firstEarlyAt is the materialize_at of a new job's first occurrence next
// (see EarlyLookahead): for an enabled cron job, the occurrence less the
// time to the one after it, at most EarlyLookahead; nil otherwise. A job
// created long before the top of an hour has its first run created as
// early as the runs after it will be. (A frequent schedule's comes out
// within the lookahead, where the early pass leaves it alone, and the
// materializer clears it with its first run.)
func firstEarlyAt(j *chronos.Job, next *time.Time) *time.Time {
	if j.CronExpr == nil || !j.Enabled || next == nil {
		return nil
	}
	sched, err := j.Schedule()
	if err != nil {
		return nil
	}
	following, _, ok := sched.Advance(*next)
	if !ok {
		return nil
	}
	at := next.Add(-min(following.Sub(*next), EarlyLookahead))
	return &at
}
