package sql

import (
	"time"

	"github.com/chronoshq/chronos"
)

// occurrence is one run the materializer will insert.
type occurrence struct {
	at      time.Time
	catchUp bool
}

// jobPlan is what materializing one job does: the runs to insert, the
// occurrences skipped by its overlap policy, and its new next_run_at.
type jobPlan struct {
	runs    []occurrence
	skipped int
	next    *time.Time
}

// plan decides a job's runs from its next_run_at, pure of the database:
// now is the materializer's clock, horizon = now + lookahead,
// active/pending say whether the job has an active / a pending run, and
// gap, when not zero, is the instant of the job's catch-up run (see
// gapOf).
func plan(j *chronos.Job, now, horizon time.Time, active, pending bool, gap time.Time) jobPlan {
	var p jobPlan
	if j.NextRunAt == nil {
		return p
	}
	// take decides one occurrence: insert it, skip it (counted, and the
	// schedule moves past it), or stop (hold it until it is due).
	take := func(o occurrence) (stop bool) {
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
	expr, loc := *j.CronExpr, j.Location()
	catchUp := !gap.IsZero()
	if catchUp {
		t = gap
	}
	for range maxOccurrencesPerJob {
		if t.After(horizon) || take(occurrence{at: t, catchUp: catchUp}) {
			break
		}
		next, err := chronos.NextOccurrence(expr, loc, t)
		if err != nil {
			return p // no further occurrence: next_run_at becomes null
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
// leader (or without any instance) leaves it behind. A job behind with
// more than one occurrence due in all, counting the runs created ahead
// before the gap that never started, has a gap: one catch-up run stands
// for them all. A job merely one occurrence late is not a gap; and a
// backlog of runs that the workers have not reached yet is none either,
// since the materializer kept the job ahead meanwhile.
func gapOf(j *chronos.Job, now time.Time, stale int) time.Time {
	if j.CronExpr == nil || j.NextRunAt == nil || j.NextRunAt.After(now) {
		return time.Time{}
	}
	expr, loc := *j.CronExpr, j.Location()
	first := j.NextRunAt.UTC()
	n1, err := chronos.NextOccurrence(expr, loc, first)
	if err != nil || n1.After(now) {
		// One occurrence not yet created is due.
		if stale == 0 {
			return time.Time{}
		}
		return first
	}
	return latestOccurrence(expr, loc, n1, now)
}

// latestOccurrence returns the last occurrence of expr at or before now,
// given one (from) that is. It probes back from now with doubling windows
// until one holds an occurrence, then walks forward, so its cost follows
// the schedule's spacing near now, not the length of the gap.
func latestOccurrence(expr string, loc *time.Location, from, now time.Time) time.Time {
	c := from
	for d := time.Second; ; d *= 2 {
		start := now.Add(-d)
		if !start.After(c) {
			break
		}
		x, err := chronos.NextOccurrence(expr, loc, start)
		if err != nil {
			break
		}
		if !x.After(now) {
			c = x
			break
		}
	}
	for range 1 << 20 {
		x, err := chronos.NextOccurrence(expr, loc, c)
		if err != nil || x.After(now) {
			break
		}
		c = x
	}
	return c
}
