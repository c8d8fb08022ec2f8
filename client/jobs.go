package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/chronoshq/chronos"
)

// JobFilter selects jobs for ListJobs. Zero fields do not filter.
type JobFilter struct {
	Enabled    *bool
	NamePrefix string            // ?name_prefix=
	Query      string            // ?q=: substring of name or description
	Labels     map[string]string // ?label=k=v, all must match
	Limit      int               // page size (server default 50, max 500)
	Cursor     string            // next_cursor of the previous page
}

func (f JobFilter) values() url.Values {
	q := url.Values{}
	if f.Enabled != nil {
		q.Set("enabled", strconv.FormatBool(*f.Enabled))
	}
	if f.NamePrefix != "" {
		q.Set("name_prefix", f.NamePrefix)
	}
	if f.Query != "" {
		q.Set("q", f.Query)
	}
	for _, kv := range Selector(f.Labels).Terms() {
		q.Add("label", kv)
	}
	return pageQuery(q, f.Limit, f.Cursor)
}

// JobPage is one page of jobs; NextCursor is "" on the last.
type JobPage struct {
	Jobs       []*chronos.Job `json:"jobs"`
	NextCursor string         `json:"next_cursor"`
}

// ListJobs returns one page of jobs, oldest first.
func (c *Client) ListJobs(ctx context.Context, f JobFilter) (*JobPage, error) {
	return call[JobPage](ctx, c, request{method: http.MethodGet, path: "/v1/jobs", query: f.values()})
}

// AllJobs follows the cursor through every page of f and returns every job
// (f.Limit is the page size; 0 asks for the largest).
func (c *Client) AllJobs(ctx context.Context, f JobFilter) ([]*chronos.Job, error) {
	if f.Limit == 0 {
		f.Limit = 500
	}
	var all []*chronos.Job
	for {
		p, err := c.ListJobs(ctx, f)
		if err != nil {
			return nil, err
		}
		all = append(all, p.Jobs...)
		if p.NextCursor == "" {
			return all, nil
		}
		f.Cursor = p.NextCursor
	}
}

// GetJob returns one job.
func (c *Client) GetJob(ctx context.Context, id int64) (*chronos.Job, error) {
	return call[chronos.Job](ctx, c, request{method: http.MethodGet, path: jobPath(id)})
}

// CreatedJob is the answer to a create: the job and, when the request set
// generate_signing_secret, its signing secret (shown this once).
type CreatedJob struct {
	chronos.Job
	SigningSecret string `json:"signing_secret,omitempty"`
}

// CreateJob creates a job from the Set fields of spec (absent fields take
// their defaults).
func (c *Client) CreateJob(ctx context.Context, spec *chronos.JobUpdate, opts ...CallOption) (*CreatedJob, error) {
	body, err := EncodeUpdate(spec)
	if err != nil {
		return nil, err
	}
	return c.CreateJobJSON(ctx, body, opts...)
}

// CreateJobJSON creates a job from a JSON object in the wire form of POST
// /v1/jobs, sent as it is (fields the client does not know pass through).
func (c *Client) CreateJobJSON(ctx context.Context, body json.RawMessage, opts ...CallOption) (*CreatedJob, error) {
	return call[CreatedJob](ctx, c, request{method: http.MethodPost, path: "/v1/jobs", body: body}.with(opts))
}

// UpdateJob applies a partial update: only the Set fields of u change (a
// Set and Null field is sent as null).
func (c *Client) UpdateJob(ctx context.Context, id int64, u *chronos.JobUpdate) (*chronos.Job, error) {
	body, err := EncodeUpdate(u)
	if err != nil {
		return nil, err
	}
	return c.UpdateJobJSON(ctx, id, body)
}

// UpdateJobJSON sends a JSON object as the body of PATCH /v1/jobs/{id}.
func (c *Client) UpdateJobJSON(ctx context.Context, id int64, body json.RawMessage) (*chronos.Job, error) {
	return call[chronos.Job](ctx, c, request{method: http.MethodPatch, path: jobPath(id), body: body})
}

// DeleteJob deletes a job and its runs.
func (c *Client) DeleteJob(ctx context.Context, id int64) error {
	return c.do(ctx, request{method: http.MethodDelete, path: jobPath(id)}, nil)
}

// PauseJob disables a job: nothing new is scheduled until it is resumed.
func (c *Client) PauseJob(ctx context.Context, id int64) (*chronos.Job, error) {
	return c.UpdateJob(ctx, id, &chronos.JobUpdate{Enabled: chronos.Some(false)})
}

// ResumeJob enables a job; its schedule restarts from now (time spent
// paused is not caught up).
func (c *Client) ResumeJob(ctx context.Context, id int64) (*chronos.Job, error) {
	return c.UpdateJob(ctx, id, &chronos.JobUpdate{Enabled: chronos.Some(true)})
}

// TriggerJob creates a manual run of a job, available now.
func (c *Client) TriggerJob(ctx context.Context, id int64, opts ...CallOption) (*chronos.Run, error) {
	return call[chronos.Run](ctx, c, request{method: http.MethodPost, path: jobPath(id) + "/trigger"}.with(opts))
}

// Schedule is a preview of fire times (GET /v1/jobs/{id}/schedule).
type Schedule struct {
	FireTimes   []time.Time `json:"fire_times"`
	LocalTimes  []string    `json:"local_times"`
	Description string      `json:"description"`
	// Skipped and Shifted: what the job's calendars did to occurrences.
	Skipped []chronos.CalendarEffect `json:"skipped,omitempty"`
	Shifted []chronos.CalendarEffect `json:"shifted,omitempty"`
}

// JobSchedule previews the next count fire times of a job after after
// (zero: now; count 0: the server's default).
func (c *Client) JobSchedule(ctx context.Context, id int64, count int, after time.Time) (*Schedule, error) {
	q := url.Values{}
	if count > 0 {
		q.Set("count", strconv.Itoa(count))
	}
	if !after.IsZero() {
		q.Set("after", after.UTC().Format(time.RFC3339))
	}
	return call[Schedule](ctx, c, request{method: http.MethodGet, path: jobPath(id) + "/schedule", query: q})
}

// HistoryEntry is one change of a job in its audit history. Changes maps
// each changed field to its value before and after (secrets masked).
type HistoryEntry struct {
	ID      int64                      `json:"id"`
	JobID   int64                      `json:"job_id"`
	Action  string                     `json:"action"`
	Actor   string                     `json:"actor"`
	At      time.Time                  `json:"at"`
	RunID   *int64                     `json:"run_id"`
	Changes map[string]json.RawMessage `json:"changes"`
	Raw     json.RawMessage            `json:"-"`
}

// UnmarshalJSON keeps the raw entry too, so fields this client does not
// know still reach -o json.
func (h *HistoryEntry) UnmarshalJSON(b []byte) error {
	type plain HistoryEntry
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*h = HistoryEntry(p)
	h.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// MarshalJSON writes the entry as the server sent it.
func (h HistoryEntry) MarshalJSON() ([]byte, error) {
	if h.Raw != nil {
		return h.Raw, nil
	}
	type plain HistoryEntry
	return json.Marshal(plain(h))
}

// HistoryPage is one page of a job's audit history, newest first.
type HistoryPage struct {
	Entries    []HistoryEntry `json:"entries"`
	NextCursor string         `json:"next_cursor"`
}

// JobHistory returns a page of a job's audit history (GET
// /v1/jobs/{id}/history).
func (c *Client) JobHistory(ctx context.Context, id int64, limit int, cursor string) (*HistoryPage, error) {
	q := pageQuery(url.Values{}, limit, cursor)
	return call[HistoryPage](ctx, c, request{method: http.MethodGet, path: jobPath(id) + "/history", query: q})
}

// BulkResult is the answer of a bulk pause or resume: the jobs changed,
// and whether matching jobs remain for another call.
type BulkResult struct {
	JobIDs []int64 `json:"job_ids"`
	Count  int     `json:"count"`
	More   bool    `json:"more"`
}

// PauseJobs pauses up to 1,000 jobs that carry every label of sel and are
// not paused yet (POST /v1/jobs/pause); call again while More.
func (c *Client) PauseJobs(ctx context.Context, sel Selector) (*BulkResult, error) {
	return c.bulk(ctx, "/v1/jobs/pause", sel)
}

// ResumeJobs resumes up to 1,000 paused jobs that carry every label of sel
// (POST /v1/jobs/resume); call again while More.
func (c *Client) ResumeJobs(ctx context.Context, sel Selector) (*BulkResult, error) {
	return c.bulk(ctx, "/v1/jobs/resume", sel)
}

func (c *Client) bulk(ctx context.Context, path string, sel Selector) (*BulkResult, error) {
	q := url.Values{}
	for _, t := range sel.Terms() {
		q.Add("label", t)
	}
	return call[BulkResult](ctx, c, request{method: http.MethodPost, path: path, query: q})
}

// SetEnabledBySelector pauses (enabled false) or resumes (true) every job
// whose labels match sel, and returns the jobs it changed. It lists the
// matching jobs and patches each that is not already so, so it works on
// any server; a job created meanwhile is not touched.
func (c *Client) SetEnabledBySelector(ctx context.Context, sel Selector, enabled bool) ([]*chronos.Job, error) {
	if len(sel) == 0 {
		return nil, &chronos.Error{Code: chronos.EINVALID, Message: "a label selector is required", Fields: map[string]string{"selector": "is required"}}
	}
	jobs, err := c.AllJobs(ctx, JobFilter{Labels: sel})
	if err != nil {
		return nil, err
	}
	var changed []*chronos.Job
	for _, j := range jobs {
		if j.Enabled == enabled || !sel.Matches(labelsOf(j)) {
			continue
		}
		nj, err := c.UpdateJob(ctx, j.ID, &chronos.JobUpdate{Enabled: chronos.Some(enabled)})
		if err != nil {
			return changed, fmt.Errorf("job %d (%s): %w", j.ID, j.Name, err)
		}
		changed = append(changed, nj)
	}
	return changed, nil
}

func jobPath(id int64) string { return "/v1/jobs/" + strconv.FormatInt(id, 10) }

// EncodeUpdate marshals the Set fields of u, and only those, as a JSON
// object (chronos.Opt writes null for an unset field, which a PATCH would
// take as "clear it").
func EncodeUpdate(u *chronos.JobUpdate) (json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	v := reflect.ValueOf(u).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := v.Field(i)
		set := f.FieldByName("Set")
		if !set.IsValid() || !set.Bool() {
			continue
		}
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		b, err := json.Marshal(f.Interface())
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", name, err)
		}
		out[name] = b
	}
	return json.Marshal(out)
}

// DeletedJobs returns the deleted jobs that had name, newest deletion
// first (GET /v1/jobs/deleted): the ids under which their histories are
// kept.
func (c *Client) DeletedJobs(ctx context.Context, name string) ([]chronos.DeletedJob, error) {
	var p struct {
		Jobs []chronos.DeletedJob `json:"jobs"`
	}
	if err := c.do(ctx, request{method: http.MethodGet, path: "/v1/jobs/deleted", query: url.Values{"name": {name}}}, &p); err != nil {
		return nil, err
	}
	return p.Jobs, nil
}
