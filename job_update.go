package chronos

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// JobUpdate is a partial update of a job (PATCH): only the fields that are
// Set change. CronExpr and RunAt may be Set to null to switch a job between
// a cron schedule and a one-shot.
type JobUpdate struct {
	Name               Opt[string]            `json:"name"`
	Description        Opt[string]            `json:"description"`
	Labels             Opt[map[string]string] `json:"labels"`
	CronExpr           Opt[string]            `json:"cron_expr"`
	RunAt              Opt[time.Time]         `json:"run_at"`
	Timezone           Opt[string]            `json:"timezone"`
	TargetURL          Opt[string]            `json:"target_url"`
	Method             Opt[string]            `json:"method"`
	Headers            Opt[map[string]string] `json:"headers"`
	SecretHeaders      Opt[[]string]          `json:"secret_headers"`
	Payload            Opt[json.RawMessage]   `json:"payload"`
	TimeoutSeconds     Opt[int]               `json:"timeout_seconds"`
	MaxRetries         Opt[int]               `json:"max_retries"`
	Backoff            Opt[BackoffStrategy]   `json:"backoff"`
	BackoffBaseSeconds Opt[float64]           `json:"backoff_base_seconds"`
	BackoffMaxSeconds  Opt[float64]           `json:"backoff_max_seconds"`
	Overlap            Opt[OverlapPolicy]     `json:"overlap"`
	Enabled            Opt[bool]              `json:"enabled"`
	OnDeadURL          Opt[string]            `json:"on_dead_url"`
	LimitKey           Opt[string]            `json:"limit_key"`

	StartsAt                Opt[time.Time]     `json:"starts_at"`
	EndsAt                  Opt[time.Time]     `json:"ends_at"`
	Misfire                 Opt[MisfirePolicy] `json:"misfire"`
	StartingDeadlineSeconds Opt[int]           `json:"starting_deadline_seconds"`
	JitterSeconds           Opt[int]           `json:"jitter_seconds"`
	Exclude                 Opt[[]DateRange]   `json:"exclude"`

	Calendars      Opt[[]string]       `json:"calendars"`
	CalendarPolicy Opt[CalendarPolicy] `json:"calendar_policy"`

	// GenerateSigningSecret, at create only, gives the job its own signing
	// secret, shown once in the response. Apply ignores it.
	GenerateSigningSecret Opt[bool] `json:"generate_signing_secret"`
}

// Apply changes j in place with the Set fields of u and returns an EINVALID
// error for a null where null means nothing. It reports whether the
// schedule (cron_expr, run_at, timezone) changed, or the job was
// re-enabled, in which case next_run_at must be recomputed from now: time
// spent disabled is not caught up. The caller validates j afterwards.
func (u *JobUpdate) Apply(j *Job) (rescheduled bool, err error) {
	f := map[string]string{}
	setNonNull(f, "name", u.Name, &j.Name)
	if u.Description.Set {
		j.Description = u.Description.Value // null clears it
	}
	if u.Labels.Set {
		j.Labels = u.Labels.Value // null clears them
		if j.Labels == nil {
			j.Labels = map[string]string{}
		}
	}
	if u.CronExpr.Set {
		if u.CronExpr.Null {
			j.CronExpr = nil
		} else {
			v := u.CronExpr.Value
			j.CronExpr = &v
		}
		rescheduled = true
	}
	if u.RunAt.Set {
		if u.RunAt.Null {
			j.RunAt = nil
		} else {
			// Postgres keeps microseconds: what is answered is what is
			// stored, not a value with nanoseconds that reads back shorter.
			v := u.RunAt.Value.UTC().Truncate(time.Microsecond)
			j.RunAt = &v
		}
		rescheduled = true
	}
	if u.Timezone.Set {
		if u.Timezone.Null {
			j.Timezone = "UTC"
		} else {
			j.Timezone = u.Timezone.Value
		}
		rescheduled = true
	}
	setNonNull(f, "target_url", u.TargetURL, &j.TargetURL)
	if u.Method.Set {
		if u.Method.Null {
			j.Method = http.MethodPost
		} else {
			j.Method = strings.ToUpper(u.Method.Value)
		}
	}
	if u.Headers.Set {
		old := j.Headers
		j.Headers = u.Headers.Value
		if j.Headers == nil {
			j.Headers = map[string]string{}
		}
		keepRedacted(j, old)
	}
	if u.SecretHeaders.Set {
		j.SecretHeaders = u.SecretHeaders.Value
		if j.SecretHeaders == nil {
			j.SecretHeaders = []string{}
		}
	}
	if u.Payload.Set {
		if u.Payload.Null {
			j.Payload = nil
		} else {
			j.Payload = u.Payload.Value
		}
	}
	if u.OnDeadURL.Set {
		// null (or "") clears it: no per-job alert.
		j.OnDeadURL = nil
		if !u.OnDeadURL.Null && u.OnDeadURL.Value != "" {
			v := u.OnDeadURL.Value
			j.OnDeadURL = &v
		}
	}
	if u.LimitKey.Set {
		// null (or "") clears it: no limit.
		j.LimitKey = nil
		if !u.LimitKey.Null && u.LimitKey.Value != "" {
			v := u.LimitKey.Value
			j.LimitKey = &v
		}
	}
	setNonNull(f, "timeout_seconds", u.TimeoutSeconds, &j.TimeoutSeconds)
	setNonNull(f, "max_retries", u.MaxRetries, &j.MaxRetries)
	setNonNull(f, "backoff", u.Backoff, &j.Backoff)
	setNonNull(f, "backoff_base_seconds", u.BackoffBaseSeconds, &j.BackoffBaseSeconds)
	setNonNull(f, "backoff_max_seconds", u.BackoffMaxSeconds, &j.BackoffMaxSeconds)
	setNonNull(f, "overlap", u.Overlap, &j.Overlap)
	if wasEnabled := j.Enabled; setNonNull(f, "enabled", u.Enabled, &j.Enabled) && j.Enabled && !wasEnabled {
		rescheduled = true
	}
	u.applyPolicies(j)
	u.applyCalendars(j)
	if len(f) > 0 {
		return false, InvalidFields(f)
	}
	return rescheduled, nil
}

// setNonNull sets *dst to o's value when o is Set and reports whether it
// did. A field that cannot be null refuses a null: f (the invalid fields
// of the update) notes it under name, and *dst stays.
func setNonNull[T any](f map[string]string, name string, o Opt[T], dst *T) bool {
	if o.Set && o.Null {
		f[name] = "cannot be null"
		return false
	}
	if o.Set {
		*dst = o.Value
	}
	return o.Set
}

// applyPolicies applies the scheduling policy fields. null clears
// starts_at, ends_at, starting_deadline_seconds and exclude, and resets
// misfire and jitter_seconds to their defaults.
func (u *JobUpdate) applyPolicies(j *Job) {
	setTime := func(o Opt[time.Time], dst **time.Time) {
		if o.Set {
			*dst = nil
			if !o.Null {
				v := o.Value.UTC()
				*dst = &v
			}
		}
	}
	setTime(u.StartsAt, &j.StartsAt)
	setTime(u.EndsAt, &j.EndsAt)
	if u.Misfire.Set {
		j.Misfire = MisfireOne
		if !u.Misfire.Null {
			j.Misfire = u.Misfire.Value
		}
	}
	if u.StartingDeadlineSeconds.Set {
		j.StartingDeadlineSeconds = nil
		if !u.StartingDeadlineSeconds.Null {
			v := u.StartingDeadlineSeconds.Value
			j.StartingDeadlineSeconds = &v
		}
	}
	if u.JitterSeconds.Set {
		j.JitterSeconds = 0
		if !u.JitterSeconds.Null {
			j.JitterSeconds = u.JitterSeconds.Value
		}
	}
	if u.Exclude.Set {
		j.Exclude = []DateRange{}
		if !u.Exclude.Null && u.Exclude.Value != nil {
			j.Exclude = u.Exclude.Value
		}
	}
}

// keepRedacted restores, in j's new headers, the stored value of every
// secret header sent back as Redacted: what a GET showed, a PATCH may
// return unchanged without wiping the credential.
func keepRedacted(j *Job, old map[string]string) {
	for k, v := range j.Headers {
		if v != Redacted || !j.IsSecretHeader(k) {
			continue
		}
		for ok, ov := range old {
			if strings.EqualFold(ok, k) {
				j.Headers[k] = ov
				break
			}
		}
	}
}
