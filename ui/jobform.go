package ui

import (
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/chronoshq/chronos"
)

// localLayout is how a one-shot's run_at appears in the form: wall-clock
// time in the job's zone, as <input type="datetime-local"> sends it.
const localLayout = "2006-01-02T15:04:05"

// jobForm is the create and edit form's fields, as text, so a form that
// does not validate comes back exactly as it was typed.
type jobForm struct {
	Name, Description, Labels                    string
	Kind, CronExpr, RunAt, Timezone              string
	Method, TargetURL, Headers, Payload          string
	TimeoutSeconds, MaxRetries, Backoff, Overlap string
	BackoffBase, BackoffMax                      string
	SecretHeaders, OnDeadURL, LimitKey           string
	// Scheduling policies: StartsAt and EndsAt as datetime-local in the
	// job's zone, Exclude one date or from..to range a line, Deadline ""
	// for none.
	Misfire, StartsAt, EndsAt, Exclude, Jitter, Deadline string
	Enabled                                              bool
	// Calendars: names separated by spaces or commas; CalendarPolicy
	// skip or next_business_day.
	Calendars, CalendarPolicy string
}

// defaultForm is the form of a new job.
func defaultForm() jobForm {
	return jobForm{Kind: "cron", Timezone: "UTC", Method: "POST", Enabled: true,
		TimeoutSeconds: strconv.Itoa(chronos.DefaultTimeoutSeconds), MaxRetries: strconv.Itoa(chronos.DefaultMaxRetries),
		Backoff: string(chronos.BackoffExponential), Overlap: string(chronos.OverlapAllow),
		BackoffBase: strconv.Itoa(chronos.DefaultBackoffBaseSeconds), BackoffMax: strconv.Itoa(chronos.DefaultBackoffMaxSeconds),
		Misfire: string(chronos.MisfireOne), Jitter: "0", CalendarPolicy: string(chronos.CalendarSkip)}
}

// formOf is the edit form of a stored job; secret header values are
// masked (chronos.Redacted), and a masked value sent back keeps the
// stored one.
func formOf(j *chronos.Job) jobForm {
	j = j.Redacted()
	terms := make([]string, 0, len(j.Labels))
	for _, l := range sortedLabels(j.Labels) {
		terms = append(terms, l.String())
	}
	f := jobForm{Name: j.Name, Description: j.Description, Labels: strings.Join(terms, " "), Kind: "cron", Timezone: j.Timezone, Method: j.Method, TargetURL: j.TargetURL,
		TimeoutSeconds: strconv.Itoa(j.TimeoutSeconds), MaxRetries: strconv.Itoa(j.MaxRetries),
		Backoff: string(j.Backoff), Overlap: string(j.Overlap), Enabled: j.Enabled,
		BackoffBase:   strconv.FormatFloat(j.BackoffBaseSeconds, 'f', -1, 64),
		BackoffMax:    strconv.FormatFloat(j.BackoffMaxSeconds, 'f', -1, 64),
		SecretHeaders: strings.Join(j.SecretHeaders, " "), Misfire: string(j.Misfire), Jitter: strconv.Itoa(j.JitterSeconds),
		Exclude: excludeText(j.Exclude)}
	f.Calendars, f.CalendarPolicy = strings.Join(j.Calendars, " "), string(j.CalendarPolicy)
	if j.OnDeadURL != nil {
		f.OnDeadURL = *j.OnDeadURL
	}
	if j.LimitKey != nil {
		f.LimitKey = *j.LimitKey
	}
	if j.StartingDeadlineSeconds != nil {
		f.Deadline = strconv.Itoa(*j.StartingDeadlineSeconds)
	}
	if j.StartsAt != nil {
		f.StartsAt = j.StartsAt.In(j.Location()).Format(localLayout)
	}
	if j.EndsAt != nil {
		f.EndsAt = j.EndsAt.In(j.Location()).Format(localLayout)
	}
	if j.CronExpr != nil {
		f.CronExpr = *j.CronExpr
	}
	if j.RunAt != nil {
		f.Kind = "once"
		f.RunAt = j.RunAt.In(j.Location()).Format(localLayout)
	}
	names := make([]string, 0, len(j.Headers))
	for k := range j.Headers {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		b.WriteString(k + ": " + j.Headers[k] + "\n")
	}
	f.Headers = b.String()
	if len(j.Payload) > 0 {
		f.Payload = string(j.Payload)
	}
	return f
}

// parseForm reads the posted fields.
func parseForm(v url.Values) jobForm {
	g := func(k string) string { return strings.TrimSpace(v.Get(k)) }
	return jobForm{Name: g("name"), Description: g("description"), Labels: g("labels"), Kind: g("kind"), CronExpr: g("cron_expr"), RunAt: g("run_at"), Timezone: g("timezone"),
		Method: g("method"), TargetURL: g("target_url"), Headers: v.Get("headers"), Payload: g("payload"),
		TimeoutSeconds: g("timeout_seconds"), MaxRetries: g("max_retries"), Backoff: g("backoff"), Overlap: g("overlap"),
		BackoffBase: g("backoff_base_seconds"), BackoffMax: g("backoff_max_seconds"), Enabled: v.Get("enabled") == "true",
		SecretHeaders: g("secret_headers"), OnDeadURL: g("on_dead_url"), LimitKey: g("limit_key"), Misfire: g("misfire"), StartsAt: g("starts_at"), EndsAt: g("ends_at"),
		Exclude: v.Get("exclude"), Jitter: g("jitter_seconds"), Deadline: g("starting_deadline_seconds"),
		Calendars: g("calendars"), CalendarPolicy: g("calendar_policy")}
}

// update turns the form into a JobUpdate that sets every field it shows
// (Enabled only when create is true: editing never pauses or resumes).
// Fields that do not parse come back as an EINVALID naming them.
func (f jobForm) update(create bool) (*chronos.JobUpdate, error) {
	bad := map[string]string{}
	u := &chronos.JobUpdate{
		Name:        chronos.Some(f.Name),
		Description: chronos.Some(f.Description),
		Timezone:    chronos.Some(cmpOr(f.Timezone, "UTC")),
		Method:      chronos.Some(f.Method),
		TargetURL:   chronos.Some(f.TargetURL),
		Backoff:     chronos.Some(chronos.BackoffStrategy(f.Backoff)),
		Overlap:     chronos.Some(chronos.OverlapPolicy(f.Overlap)),
	}
	if create {
		u.Enabled = chronos.Some(f.Enabled)
	}
	switch f.Kind {
	case "once":
		loc, err := chronos.LoadTimezone(cmpOr(f.Timezone, "UTC"))
		if err != nil {
			bad["timezone"] = err.Error()
			break
		}
		t, err := parseLocal(f.RunAt, loc)
		if err != nil {
			bad["run_at"] = "must be a date and time, e.g. 2026-12-24T18:00"
			break
		}
		u.RunAt = chronos.Some(t)
		u.CronExpr = chronos.Opt[string]{Set: true, Null: true}
	default:
		if f.CronExpr == "" {
			bad["cron_expr"] = "is required for a cron schedule"
		}
		u.CronExpr = chronos.Some(f.CronExpr)
		u.RunAt = chronos.Opt[time.Time]{Set: true, Null: true}
	}
	f.policies(u, bad)
	headers := map[string]string{}
	for i, line := range strings.Split(f.Headers, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) == "" {
			bad["headers"] = "line " + strconv.Itoa(i+1) + " must be Name: value"
			continue
		}
		headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	u.Headers = chronos.Some(headers)
	// Labels as the search takes them: key=value terms apart by spaces or
	// commas (neither can be part of a label).
	labels := map[string]string{}
	if terms := strings.FieldsFunc(f.Labels, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }); len(terms) > 0 {
		sel, err := chronos.ParseSelector("labels", terms)
		if err != nil {
			bad["labels"] = fieldMessage(err, "labels")
		} else {
			labels = sel
		}
	}
	u.Labels = chronos.Some(labels)
	if f.Payload == "" {
		u.Payload = chronos.Opt[json.RawMessage]{Set: true, Null: true}
	} else if !json.Valid([]byte(f.Payload)) {
		bad["payload"] = "must be valid JSON"
	} else {
		u.Payload = chronos.Some(json.RawMessage(f.Payload))
	}
	intField(bad, "timeout_seconds", f.TimeoutSeconds, &u.TimeoutSeconds)
	intField(bad, "max_retries", f.MaxRetries, &u.MaxRetries)
	floatField(bad, "backoff_base_seconds", f.BackoffBase, &u.BackoffBaseSeconds)
	floatField(bad, "backoff_max_seconds", f.BackoffMax, &u.BackoffMaxSeconds)
	if len(bad) > 0 {
		return nil, chronos.InvalidFields(bad)
	}
	return u, nil
}

// policies sets the scheduling policy fields and the alert and secret
// header settings. A one-shot clears starts_at, ends_at and exclude
// (cron jobs only), whatever the hidden inputs still hold.
func (f jobForm) policies(u *chronos.JobUpdate, bad map[string]string) {
	u.Misfire = chronos.Some(chronos.MisfirePolicy(cmpOr(f.Misfire, string(chronos.MisfireOne))))
	u.OnDeadURL = chronos.Some(f.OnDeadURL) // "" clears it
	u.LimitKey = chronos.Some(f.LimitKey)   // "" clears it
	u.SecretHeaders = chronos.Some(strings.FieldsFunc(f.SecretHeaders, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }))
	intField(bad, "jitter_seconds", cmpOr(f.Jitter, "0"), &u.JitterSeconds)
	u.StartingDeadlineSeconds = chronos.Opt[int]{Set: true, Null: true}
	if f.Deadline != "" {
		intField(bad, "starting_deadline_seconds", f.Deadline, &u.StartingDeadlineSeconds)
	}
	none := chronos.Opt[time.Time]{Set: true, Null: true}
	u.StartsAt, u.EndsAt = none, none
	u.Exclude = chronos.Some([]chronos.DateRange{})
	u.Calendars, u.CalendarPolicy = chronos.Some([]string{}), chronos.Some(chronos.CalendarSkip)
	if f.Kind == "once" {
		return
	}
	u.Calendars = chronos.Some(strings.FieldsFunc(f.Calendars, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }))
	u.CalendarPolicy = chronos.Some(chronos.CalendarPolicy(cmpOr(f.CalendarPolicy, string(chronos.CalendarSkip))))
	loc, err := chronos.LoadTimezone(cmpOr(f.Timezone, "UTC"))
	if err != nil {
		return // the schedule's check names the time zone
	}
	for name, v := range map[string]struct {
		text string
		dst  *chronos.Opt[time.Time]
	}{"starts_at": {f.StartsAt, &u.StartsAt}, "ends_at": {f.EndsAt, &u.EndsAt}} {
		if v.text == "" {
			continue
		}
		t, err := parseLocal(v.text, loc)
		if err != nil {
			bad[name] = "must be a date and time, e.g. 2026-12-24T18:00"
			continue
		}
		*v.dst = chronos.Some(t)
	}
	ranges, err := parseExclude(f.Exclude)
	if err != nil {
		bad["exclude"] = err.Error()
		return
	}
	u.Exclude = chronos.Some(ranges)
}

// parseExclude reads the exclusions as typed: one date (2026-12-25) or
// range (2026-12-24..2026-12-26) a line; the dates themselves are checked
// by the job's rules.
func parseExclude(text string) ([]chronos.DateRange, error) {
	out := []chronos.DateRange{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		from, to, ok := strings.Cut(line, "..")
		if !ok {
			to = from
		}
		from, to = strings.TrimSpace(from), strings.TrimSpace(to)
		if from == "" || to == "" || strings.ContainsAny(from+to, " \t") {
			return nil, errors.New("line " + strconv.Itoa(i+1) + " must be a date (2026-12-25) or a range (2026-12-24..2026-12-26)")
		}
		out = append(out, chronos.DateRange{From: from, To: to})
	}
	return out, nil
}

// excludeText is the exclusions as the form shows them.
func excludeText(ranges []chronos.DateRange) string {
	var b strings.Builder
	for _, r := range ranges {
		b.WriteString(r.From)
		if r.To != r.From {
			b.WriteString(".." + r.To)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func intField(bad map[string]string, name, v string, dst *chronos.Opt[int]) {
	n, err := strconv.Atoi(v)
	if err != nil {
		bad[name] = "must be a whole number"
		return
	}
	*dst = chronos.Some(n)
}

func floatField(bad map[string]string, name, v string, dst *chronos.Opt[float64]) {
	n, err := strconv.ParseFloat(v, 64)
	if err != nil {
		bad[name] = "must be a number"
		return
	}
	*dst = chronos.Some(n)
}

// parseLocal reads a datetime-local value (seconds optional) as wall-clock
// time in loc.
func parseLocal(v string, loc *time.Location) (time.Time, error) {
	for _, layout := range []string{localLayout, "2006-01-02T15:04"} {
		if t, err := time.ParseInLocation(layout, v, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("not a local date and time")
}

func cmpOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// jobFormFields are the job form's inputs, under which an EINVALID's
// message for the field is shown.
var jobFormFields = []string{"name", "description", "labels", "cron_expr", "run_at", "timezone", "target_url", "headers",
	"payload", "secret_headers", "on_dead_url", "limit_key", "misfire", "starts_at", "ends_at", "exclude", "jitter_seconds",
	"starting_deadline_seconds", "calendars", "calendar_policy", "timeout_seconds", "max_retries", "backoff",
	"backoff_base_seconds", "backoff_max_seconds", "overlap"}

// fieldErrors splits an EINVALID's fields into those the job form shows
// next to an input and the rest.
func fieldErrors(err error) (shown map[string]string, other map[string]string) {
	return splitFieldErrors(err, jobFormFields)
}

// splitFieldErrors splits an EINVALID's fields into those a form shows
// next to one of its inputs (inputs) and the rest, which it lists apart.
func splitFieldErrors(err error, inputs []string) (shown, other map[string]string) {
	shown, other = map[string]string{}, map[string]string{}
	var e *chronos.Error
	if !errors.As(err, &e) {
		return shown, other
	}
	for k, v := range e.Fields {
		if slices.Contains(inputs, k) {
			shown[k] = v
		} else {
			other[k] = v
		}
	}
	return shown, other
}

// fieldMessage is what an EINVALID says about one field.
func fieldMessage(err error, field string) string {
	var e *chronos.Error
	if errors.As(err, &e) && e.Fields[field] != "" {
		return e.Fields[field]
	}
	return chronos.ErrorMessage(err)
}
