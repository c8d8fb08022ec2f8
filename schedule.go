package chronos

import (
	"fmt"
	"time"

	"github.com/adhocore/gronx"
)

// ValidateCron checks a cron expression: 5 fields, an optional leading
// seconds field (6 fields), an optional trailing year, the @-macros
// (@hourly, @daily, ...), and L, W, #.
func ValidateCron(expr string) error {
	if len(expr) > 256 {
		return fmt.Errorf("cron expression too long")
	}
	if !gronx.IsValid(expr) {
		return fmt.Errorf("invalid cron expression %q", expr)
	}
	return nil
}

// NextOccurrence returns the first occurrence of expr strictly after
// `after`, evaluated on the wall clock of loc, in UTC.
//
// DST rules: a wall-clock time that does not exist (spring forward) fires
// once at the first instant after the gap; a repeated wall-clock time (fall
// back) fires once, at its first occurrence.
func NextOccurrence(expr string, loc *time.Location, after time.Time) (time.Time, error) {
	// TODO(schedule): DST rules; see schedule_test.go.
	t, err := gronx.NextTickAfter(expr, after.In(loc), false)
	if err != nil {
		return time.Time{}, fmt.Errorf("next occurrence of %q: %w", expr, err)
	}
	return t.UTC(), nil
}

// NextRun returns the job's next occurrence strictly after `after`: the
// cron schedule's next tick, or run_at for a one-shot whose time has not
// been materialized yet (nil when there is none).
func (j *Job) NextRun(after time.Time) (*time.Time, error) {
	if j.CronExpr != nil {
		t, err := NextOccurrence(*j.CronExpr, j.Location(), after)
		if err != nil {
			return nil, err
		}
		return &t, nil
	}
	if j.RunAt != nil {
		t := j.RunAt.UTC()
		return &t, nil
	}
	return nil, nil
}
