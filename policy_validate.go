package chronos

import (
	"fmt"
	"time"
)

// applyPolicyDefaults fills the scheduling policy fields of a new job.
func (j *Job) applyPolicyDefaults() {
	if j.Misfire == "" {
		j.Misfire = MisfireOne
	}
	if j.Exclude == nil {
		j.Exclude = []DateRange{}
	}
}

// validatePolicies checks the scheduling policy fields (starts_at,
// ends_at, misfire, starting_deadline_seconds, jitter_seconds, exclude)
// into f, by field name. Like Validate it does not ask whether the
// schedule fires again.
func (j *Job) validatePolicies(f map[string]string) {
	cron := j.CronExpr != nil
	for name, t := range map[string]*time.Time{"starts_at": j.StartsAt, "ends_at": j.EndsAt} {
		switch {
		case t == nil:
		case !cron:
			f[name] = "applies to cron jobs only (a one-shot has run_at)"
		default:
			if err := checkYear(*t); err != nil {
				f[name] = err.Error()
			}
		}
	}
	if cron && j.StartsAt != nil && j.EndsAt != nil && !j.EndsAt.After(*j.StartsAt) && f["ends_at"] == "" {
		f["ends_at"] = "must be after starts_at"
	}
	if !j.Misfire.Valid() {
		f["misfire"] = "must be one, none or all"
	}
	if d := j.StartingDeadlineSeconds; d != nil && (*d < 1 || *d > MaxStartingDeadline) {
		f["starting_deadline_seconds"] = fmt.Sprintf("must be between 1 and %d, or null for no deadline", MaxStartingDeadline)
	}
	if j.JitterSeconds < 0 || j.JitterSeconds > MaxJitterSeconds {
		f["jitter_seconds"] = fmt.Sprintf("must be between 0 and %d", MaxJitterSeconds)
	}
	if len(j.Exclude) > 0 && !cron {
		f["exclude"] = "applies to cron jobs only"
	}
	if !cron || f["cron_expr"] != "" || f["timezone"] != "" {
		return
	}
	s, err := j.Schedule()
	if err != nil {
		if e, ok := err.(*Error); ok && e.Fields["exclude"] != "" {
			f["exclude"] = e.Fields["exclude"]
		}
		return
	}
	if j.JitterSeconds > 0 && f["jitter_seconds"] == "" {
		if gap := s.ShortestGap(time.Now()); gap > 0 && time.Duration(j.JitterSeconds)*time.Second >= gap {
			f["jitter_seconds"] = fmt.Sprintf("must be less than the schedule's shortest gap between occurrences (%v)", gap)
		}
	}
}

// ShortestGap is the shortest time between two consecutive occurrences of
// the expression over its next 1000 occurrences from `from` (exclusions
// and bounds aside), or 0 when it has fewer than two. It bounds
// jitter_seconds, so that jitter never reorders occurrences.
func (s *Schedule) ShortestGap(from time.Time) time.Duration {
	if s.spec.every > 0 {
		return s.spec.every
	}
	prev, ok := s.raw(from)
	var gap time.Duration
	for i := 0; ok && i < 1000; i++ {
		t, more := s.raw(prev)
		if !more {
			break
		}
		if d := t.Sub(prev); gap == 0 || d < gap {
			gap = d
		}
		prev = t
	}
	return gap
}
