package chronos

// NewJob builds the job a create request describes, for the API and the
// console alike. The request has the shape of a PATCH (JobUpdate) applied
// to a job holding the defaults, which gives one set of rules for both: an
// absent field takes its default, an explicit value (even 0) is validated
// as given, null on a field that cannot be null is EINVALID.
func NewJob(u *JobUpdate) (*Job, error) {
	var j Job
	j.ApplyDefaults()
	j.MaxRetries = DefaultMaxRetries
	j.Enabled = true
	if _, err := u.Apply(&j); err != nil {
		return nil, err
	}
	if j.Timezone == "" {
		j.Timezone = "UTC"
	}
	if j.Headers == nil {
		j.Headers = map[string]string{}
	}
	// As in ApplyDefaults: the default cap never undercuts a larger base.
	if !u.BackoffMaxSeconds.Set && j.BackoffMaxSeconds < j.BackoffBaseSeconds {
		j.BackoffMaxSeconds = j.BackoffBaseSeconds
	}
	if err := j.Validate(); err != nil {
		return nil, err
	}
	return &j, nil
}
