package chronos

import (
	"fmt"
	"time"
)

// TriggerBackfill: a run created by POST /v1/jobs/{id}/backfill for a past
// occurrence of the job's schedule. Its identity is (job, scheduled_at),
// as a scheduled run's: an occurrence has at most one run of either kind.
const TriggerBackfill Trigger = "backfill"

// MaxBackfill is the most occurrences one backfill call covers; a range
// holding more is refused (400 naming "to"), so one call stays one short
// transaction.
const MaxBackfill = 1000

// BackfillRequest is the body of POST /v1/jobs/{id}/backfill: the
// occurrences in [From, To) get a run each, oldest first; DryRun lists
// them without creating any.
type BackfillRequest struct {
	From   time.Time `json:"from"`
	To     time.Time `json:"to"`
	DryRun bool      `json:"dry_run"`
}

// Backfill is the answer of a backfill: every occurrence in the range
// (Occurrences, oldest first), the runs created for them (none on a dry
// run), and those that already had a run (Existing: a second backfill of
// an overlapping range, or the schedule's own run). Skipped and Shifted
// are the occurrences the job's calendars skipped or moved.
type Backfill struct {
	JobID       int64            `json:"job_id"`
	From        time.Time        `json:"from"`
	To          time.Time        `json:"to"`
	DryRun      bool             `json:"dry_run"`
	Occurrences []time.Time      `json:"occurrences"`
	Created     []*Run           `json:"created"`
	Existing    []time.Time      `json:"existing"`
	Skipped     []CalendarEffect `json:"skipped,omitempty"`
	Shifted     []CalendarEffect `json:"shifted,omitempty"`
}

// Validate checks a backfill's range: from before to (Clamp, called
// first, brings a to past now back to now).
func (r BackfillRequest) Validate() error {
	f := map[string]string{}
	switch {
	case r.From.IsZero():
		f["from"] = "is required (RFC 3339)"
	case checkYear(r.From) != nil:
		f["from"] = checkYear(r.From).Error()
	}
	switch {
	case r.To.IsZero():
		f["to"] = "is required (RFC 3339)"
	case checkYear(r.To) != nil:
		f["to"] = checkYear(r.To).Error()
	case !r.From.IsZero() && !r.To.After(r.From):
		f["to"] = "must be after from"
	}
	if len(f) > 0 {
		return InvalidFields(f)
	}
	return nil
}

// Clamp brings a to after now back to now: the schedule runs the future,
// a backfill the past.
func (r *BackfillRequest) Clamp(now time.Time) {
	if r.To.After(now) {
		r.To = now.UTC()
	}
}

// BackfillPlan returns the job's occurrences in [from, to), oldest first
// (time zone, DST, bounds, exclusions and calendars applied: the
// schedule the materializer follows), and what its calendars did in that
// span. More than MaxBackfill occurrences is an EINVALID naming "to",
// with the last instant that would fit. A one-shot job has no schedule to
// backfill (EINVALID naming cron_expr).
func (j *Job) BackfillPlan(from, to time.Time) (Backfill, error) {
	b := Backfill{JobID: j.ID, From: from.UTC(), To: to.UTC(), Occurrences: []time.Time{},
		Created: []*Run{}, Existing: []time.Time{}}
	if j.CronExpr == nil {
		return b, InvalidFields(map[string]string{"cron_expr": "backfill applies to cron jobs only"})
	}
	s, err := j.Schedule()
	if err != nil {
		return b, err
	}
	for t, ok := s.Next(from.Add(-time.Nanosecond)); ok && t.Before(to); t, ok = s.Next(t) {
		if len(b.Occurrences) == MaxBackfill {
			last := b.Occurrences[MaxBackfill-1]
			return b, InvalidFields(map[string]string{"to": fmt.Sprintf(
				"the range holds more than %d occurrences; the first %d end at %s (use a to of at most %s)",
				MaxBackfill, MaxBackfill, last.Format(time.RFC3339), last.Add(time.Second).Format(time.RFC3339))})
		}
		b.Occurrences = append(b.Occurrences, t)
	}
	for _, e := range s.CalendarEffects(from.Add(-time.Nanosecond), to.Add(-time.Nanosecond), MaxPreviewEffects) {
		if s.policy == CalendarNextBusinessDay {
			b.Shifted = append(b.Shifted, e)
		} else {
			b.Skipped = append(b.Skipped, e)
		}
	}
	return b, nil
}
