package chronos

import (
	"fmt"
	"time"
)

// MisfirePolicy says what a cron job does with the occurrences it missed
// while the cluster was down or had no leader (a gap: more than one
// occurrence missed).
type MisfirePolicy string

// Misfire policies.
const (
	// MisfireOne: one run, flagged catch_up, stands for every missed
	// occurrence (at the latest of them); then the schedule resumes.
	MisfireOne MisfirePolicy = "one"
	// MisfireNone: the missed occurrences are counted as missed, none runs;
	// the schedule resumes with the first occurrence after now.
	MisfireNone MisfirePolicy = "none"
	// MisfireAll: every missed occurrence runs, in order, each flagged
	// catch_up, at most MaxMisfireRuns of them (the latest); older ones
	// are counted as missed.
	MisfireAll MisfirePolicy = "all"
)

// Valid reports whether p is a known policy.
func (p MisfirePolicy) Valid() bool { return p == MisfireOne || p == MisfireNone || p == MisfireAll }

// Limits of the scheduling policy fields.
const (
	MaxMisfireRuns          = 100           // misfire "all": runs created for one gap
	MaxJitterSeconds        = 3600          // jitter_seconds
	MaxStartingDeadline     = 7 * 24 * 3600 // starting_deadline_seconds
	MaxExclusions           = 100           // entries of exclude
	MaxExcludedCountedRange = 10000         // excluded occurrences counted per range (see Schedule.Step)
)

// JobState is what a job is doing, derived from enabled and next_run_at.
type JobState string

// Job states.
const (
	StateScheduled JobState = "scheduled" // enabled, with a next occurrence
	StatePaused    JobState = "paused"    // enabled is false
	// StateFinished: enabled but no occurrence left: past ends_at, a
	// one-shot that fired, or a schedule that never fires again.
	StateFinished JobState = "finished"
)

// StateOf derives a job's state.
func StateOf(enabled bool, next *time.Time) JobState {
	switch {
	case !enabled:
		return StatePaused
	case next == nil:
		return StateFinished
	}
	return StateScheduled
}

// DateRange is an inclusive range of calendar dates (YYYY-MM-DD) in the
// job's time zone: from 00:00 on From to 24:00 on To.
type DateRange struct {
	From string `json:"from"`
	To   string `json:"to"`
}

const dateLayout = "2006-01-02"

// span is a DateRange as instants in a zone: [start, end).
type span struct{ start, end time.Time }

// parseDateRange checks r and maps it to instants in loc.
func parseDateRange(r DateRange, loc *time.Location) (span, error) {
	from, err := time.Parse(dateLayout, r.From)
	if err != nil {
		return span{}, fmt.Errorf("from %q must be a date, YYYY-MM-DD", r.From)
	}
	to, err := time.Parse(dateLayout, r.To)
	if err != nil {
		return span{}, fmt.Errorf("to %q must be a date, YYYY-MM-DD", r.To)
	}
	if to.Before(from) {
		return span{}, fmt.Errorf("to %s is before from %s", r.To, r.From)
	}
	start, _ := resolveWall(from, loc)
	end, _ := resolveWall(to.AddDate(0, 0, 1), loc)
	return span{start: start.UTC(), end: end.UTC()}, nil
}
