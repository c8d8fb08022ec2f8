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
	nonNull := func(name string, set, null bool) bool {
		if set && null {
			f[name] = "cannot be null"
			return false
		}
		return set
	}
	if nonNull("name", u.Name.Set, u.Name.Null) {
		j.Name = u.Name.Value
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
	if nonNull("target_url", u.TargetURL.Set, u.TargetURL.Null) {
		j.TargetURL = u.TargetURL.Value
	}
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
	if nonNull("timeout_seconds", u.TimeoutSeconds.Set, u.TimeoutSeconds.Null) {
		j.TimeoutSeconds = u.TimeoutSeconds.Value
	}
	if nonNull("max_retries", u.MaxRetries.Set, u.MaxRetries.Null) {
		j.MaxRetries = u.MaxRetries.Value
	}
	if nonNull("backoff", u.Backoff.Set, u.Backoff.Null) {
		j.Backoff = u.Backoff.Value
	}
	if nonNull("backoff_base_seconds", u.BackoffBaseSeconds.Set, u.BackoffBaseSeconds.Null) {
		j.BackoffBaseSeconds = u.BackoffBaseSeconds.Value
	}
	if nonNull("backoff_max_seconds", u.BackoffMaxSeconds.Set, u.BackoffMaxSeconds.Null) {
		j.BackoffMaxSeconds = u.BackoffMaxSeconds.Value
	}
	if nonNull("overlap", u.Overlap.Set, u.Overlap.Null) {
		j.Overlap = u.Overlap.Value
	}
	if nonNull("enabled", u.Enabled.Set, u.Enabled.Null) {
		if u.Enabled.Value && !j.Enabled {
			rescheduled = true
		}
		j.Enabled = u.Enabled.Value
	}
	if len(f) > 0 {
		return false, InvalidFields(f)
	}
	return rescheduled, nil
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
