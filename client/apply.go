package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/sourcegraph/conc/pool"

	"github.com/chronoshq/chronos"
)

// Action is what Apply does to one job.
type Action string

// Actions of a plan.
const (
	ActionCreate Action = "create"
	ActionUpdate Action = "update"
	ActionDelete Action = "delete"
)

// Change is one field of a job that an update changes.
type Change struct {
	Field    string          `json:"field"`
	From, To json.RawMessage `json:"-"`
}

// MarshalJSON writes from and to as JSON values.
func (c Change) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Field string          `json:"field"`
		From  json.RawMessage `json:"from"`
		To    json.RawMessage `json:"to"`
	}{c.Field, c.From, c.To})
}

// Step is one write of a plan.
type Step struct {
	Action  Action   `json:"action"`
	Name    string   `json:"name"`
	ID      int64    `json:"id,omitempty"` // of an existing job
	Changes []Change `json:"changes,omitempty"`
	spec    *Spec
}

// Plan is what Apply would do to make the server match a manifest.
type Plan struct {
	Steps     []Step `json:"steps"`
	Unchanged int    `json:"unchanged"`
	// Objects are the writes of named objects, calendars and limits
	// (PlanObjects): creates and updates go before the jobs' steps,
	// deletes after. ObjectsUnchanged counts the others by kind.
	Objects          []ObjectStep   `json:"objects,omitempty"`
	ObjectsUnchanged map[string]int `json:"objects_unchanged,omitempty"`
}

// Empty reports whether the plan writes nothing.
func (p *Plan) Empty() bool { return len(p.Steps) == 0 && len(p.Objects) == 0 }

// PlanOptions tunes MakePlan.
type PlanOptions struct {
	// Prune deletes the jobs that match Selector and that the manifest
	// does not name. It needs a non-empty Selector.
	Prune    bool
	Selector Selector
	// AllowEmpty lets Prune run when no job of the manifest matches
	// Selector (an empty file, a file of comments, `jobs: []`, or jobs
	// that all lack the selector's labels): such a prune deletes every job
	// the selector picks. Without it, MakePlan refuses, as kubectl does.
	AllowEmpty bool
}

// MakePlan compares the manifest with the server: a job the manifest names
// that the server lacks is created; one whose fields differ is updated
// with just those fields. Fields the spec leaves out are compared with
// their defaults, so deleting a line from the file resets the field; the
// exception is enabled, compared only when the spec sets it, so a job
// paused by an operator stays paused across applies. Secret header values
// are write-only and cannot be compared: a header the server shows
// redacted counts as unchanged.
func (c *Client) MakePlan(ctx context.Context, specs []*Spec, o PlanOptions) (*Plan, error) {
	if o.Prune && len(o.Selector) == 0 {
		return nil, &chronos.Error{Code: chronos.EINVALID, Message: "--prune needs a label selector: it deletes only the jobs the selector picks",
			Fields: map[string]string{"selector": "is required with prune"}}
	}
	if o.Prune && !o.AllowEmpty && !anySelected(specs, o.Selector) {
		return nil, emptyPrune(specs, o.Selector)
	}
	existing, err := c.AllJobs(ctx, JobFilter{})
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	byName := make(map[string]*chronos.Job, len(existing))
	for _, j := range existing {
		byName[j.Name] = j
	}
	p := &Plan{Steps: []Step{}}
	named := make(map[string]bool, len(specs))
	for _, s := range specs {
		named[s.Name] = true
		cur, ok := byName[s.Name]
		if !ok {
			p.Steps = append(p.Steps, Step{Action: ActionCreate, Name: s.Name, spec: s})
			continue
		}
		changes, err := diff(s, cur)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Source, err)
		}
		if len(changes) == 0 {
			p.Unchanged++
			continue
		}
		p.Steps = append(p.Steps, Step{Action: ActionUpdate, Name: s.Name, ID: cur.ID, Changes: changes, spec: s})
	}
	if o.Prune {
		for _, j := range existing {
			if !named[j.Name] && o.Selector.Matches(labelsOf(j)) {
				p.Steps = append(p.Steps, Step{Action: ActionDelete, Name: j.Name, ID: j.ID})
			}
		}
	}
	return p, nil
}

// managedFields are the fields apply compares: every field a spec may set
// but generate_signing_secret (create only).
func managedFields() []string {
	var out []string
	for f := range specFields() {
		if f != "generate_signing_secret" {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

// diff compares a spec's job with the server's, field by field, through
// their JSON forms.
func diff(s *Spec, cur *chronos.Job) ([]Change, error) {
	want, err := jsonFields(s.Job)
	if err != nil {
		return nil, err
	}
	have, err := jsonFields(cur)
	if err != nil {
		return nil, err
	}
	var out []Change
	for _, f := range managedFields() {
		if f == "enabled" {
			if _, set := s.Fields["enabled"]; !set {
				continue
			}
		}
		w, h := want[f], have[f]
		if w == nil {
			continue // a field the root type lacks
		}
		if f == "headers" {
			w = unredacted(w, h)
		}
		if !sameJSON(w, h) {
			out = append(out, Change{Field: f, From: h, To: w})
		}
	}
	return out, nil
}

// unredacted returns want with the value of each header the server shows
// as chronos.Redacted replaced by that marker: the stored secret cannot be
// read back, and sending the marker keeps it (see chronos.Redacted).
func unredacted(want, have json.RawMessage) json.RawMessage {
	var w, h map[string]string
	if json.Unmarshal(want, &w) != nil || json.Unmarshal(have, &h) != nil {
		return want
	}
	for k, v := range h {
		if _, ok := w[k]; ok && v == chronos.Redacted {
			w[k] = chronos.Redacted
		}
	}
	b, _ := json.Marshal(w)
	return b
}

func jsonFields(j *chronos.Job) (map[string]json.RawMessage, error) {
	b, err := json.Marshal(j.Redacted())
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	return m, json.Unmarshal(b, &m)
}

// sameJSON compares two JSON values by meaning (key order, spacing and
// number spelling aside); an absent value equals null.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if len(a) > 0 && json.Unmarshal(a, &x) != nil {
		return false
	}
	if len(b) > 0 && json.Unmarshal(b, &y) != nil {
		return false
	}
	// An empty object or list and null mean the same for these fields.
	return reflect.DeepEqual(emptyToNil(x), emptyToNil(y))
}

func emptyToNil(v any) any {
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 {
			return nil
		}
	case []any:
		if len(t) == 0 {
			return nil
		}
	}
	return v
}

// ApplyResult is what Apply did: to jobs, and to named objects by kind
// (the unchanged ones are the plan's).
type ApplyResult struct {
	Created, Updated, Deleted, Unchanged int
	Objects                              map[string]*Tally
}

// Apply carries out a plan, Parallel writes at a time (at least 1). Every
// step is tried; the error joins each that failed, naming its job.
//
// Creates go in batches of up to MaxJobBatch jobs (POST /v1/jobs/batch),
// each all or nothing; against a server without the batch route they go
// one by one.
func (c *Client) Apply(ctx context.Context, p *Plan, parallel int) (ApplyResult, error) {
	res := ApplyResult{Unchanged: p.Unchanged, Objects: map[string]*Tally{}}
	for kind, n := range p.ObjectsUnchanged {
		tallyOf(res.Objects, kind).Unchanged = n
	}
	// The calendars and limits the jobs name first; a failure stops here,
	// before a job could name one that is not there.
	if err := c.applyObjects(ctx, p.Objects, false, res.Objects); err != nil {
		return res, err
	}
	res, err := c.applyJobs(ctx, p, parallel, res)
	// Their deletes last: the jobs that named them have moved off them.
	oerr := c.applyObjects(ctx, p.Objects, true, res.Objects)
	return res, errors.Join(err, oerr)
}

// applyJobs carries out the jobs' steps of a plan.
func (c *Client) applyJobs(ctx context.Context, p *Plan, parallel int, res ApplyResult) (ApplyResult, error) {
	counts := make([]Action, len(p.Steps))
	wp := pool.New().WithContext(ctx).WithMaxGoroutines(max(parallel, 1))
	var creates []int // indexes of the create steps
	for i, st := range p.Steps {
		if st.Action == ActionCreate {
			creates = append(creates, i)
			continue
		}
		wp.Go(func(ctx context.Context) error {
			if err := c.applyStep(ctx, st); err != nil {
				return err
			}
			counts[i] = st.Action
			return nil
		})
	}
	for _, batch := range createBatches(p.Steps, creates) {
		wp.Go(func(ctx context.Context) error {
			if err := c.createBatch(ctx, p.Steps, batch); err != nil {
				return err
			}
			for _, i := range batch {
				counts[i] = ActionCreate
			}
			return nil
		})
	}
	err := wp.Wait()
	for _, a := range counts {
		switch a {
		case ActionCreate:
			res.Created++
		case ActionUpdate:
			res.Updated++
		case ActionDelete:
			res.Deleted++
		}
	}
	return res, err
}

// applyStep carries out one step alone.
func (c *Client) applyStep(ctx context.Context, st Step) error {
	var err error
	switch st.Action {
	case ActionCreate:
		body, _ := json.Marshal(st.spec.Fields)
		_, err = c.CreateJobJSON(ctx, body)
	case ActionUpdate:
		patch := map[string]json.RawMessage{}
		for _, ch := range st.Changes {
			patch[ch.Field] = ch.To
		}
		body, _ := json.Marshal(patch)
		_, err = c.UpdateJobJSON(ctx, st.ID, body)
	case ActionDelete:
		err = c.DeleteJob(ctx, st.ID)
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", st.Action, st.Name, err)
	}
	return nil
}

// batchBodyBytes bounds the body of one batch of creates, below the
// server's default limit for the batch route (16 MiB).
const batchBodyBytes = 8 << 20

// createBatches splits the create steps into batches of at most
// MaxJobBatch jobs and about batchBodyBytes.
func createBatches(steps []Step, creates []int) [][]int {
	var (
		out   [][]int
		cur   []int
		bytes int
	)
	for _, i := range creates {
		n := 0
		for k, v := range steps[i].spec.Fields {
			n += len(k) + len(v) + 4
		}
		if len(cur) > 0 && (len(cur) == MaxJobBatch || bytes+n > batchBodyBytes) {
			out, cur, bytes = append(out, cur), nil, 0
		}
		cur, bytes = append(cur, i), bytes+n
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// createBatch creates the jobs of steps[batch] in one request; an older
// server without the batch route gets them one by one.
func (c *Client) createBatch(ctx context.Context, steps []Step, batch []int) error {
	bodies := make([]json.RawMessage, len(batch))
	for k, i := range batch {
		bodies[k], _ = json.Marshal(steps[i].spec.Fields)
	}
	_, err := c.CreateJobsJSON(ctx, bodies)
	var e *Error
	if errors.As(err, &e) && (e.Status == http.StatusNotFound || e.Status == http.StatusMethodNotAllowed) {
		var errs []error
		for _, i := range batch {
			errs = append(errs, c.applyStep(ctx, steps[i]))
		}
		return errors.Join(errs...)
	}
	if err == nil {
		return nil
	}
	// Name each failing job, as a create of its own would have.
	if errors.As(err, &e) && e.API != nil && len(e.API.Fields) > 0 {
		var errs []error
		fields := slices.Sorted(maps.Keys(e.API.Fields))
		for _, f := range fields {
			var k int
			rest := ""
			if n, _ := fmt.Sscanf(f, "jobs[%d]", &k); n == 1 && k >= 0 && k < len(batch) {
				rest = strings.TrimPrefix(strings.TrimPrefix(f, fmt.Sprintf("jobs[%d]", k)), ".")
				if rest == "" {
					rest = "job"
				}
				errs = append(errs, fmt.Errorf("%s %s: %s: %s", ActionCreate, steps[batch[k]].Name, rest, e.API.Fields[f]))
				continue
			}
			errs = append(errs, fmt.Errorf("%s: %s: %s", ActionCreate, f, e.API.Fields[f]))
		}
		return fmt.Errorf("%w (the batch of %d jobs was not created)", errors.Join(errs...), len(batch))
	}
	return fmt.Errorf("%s %d jobs (%s ...): %w", ActionCreate, len(batch), steps[batch[0]].Name, err)
}

// String renders a plan as a diff, one line per step and field.
func (p *Plan) String() string {
	var b strings.Builder
	objectLines(&b, p.Objects)
	for _, st := range p.Steps {
		switch st.Action {
		case ActionCreate:
			fmt.Fprintf(&b, "+ create %s\n", st.Name)
		case ActionDelete:
			fmt.Fprintf(&b, "- delete %s (id %d)\n", st.Name, st.ID)
		case ActionUpdate:
			fmt.Fprintf(&b, "~ update %s (id %d)\n", st.Name, st.ID)
			for _, ch := range st.Changes {
				fmt.Fprintf(&b, "    %s: %s -> %s\n", ch.Field, compact(ch.From), compact(ch.To))
			}
		}
	}
	return b.String()
}

func compact(b json.RawMessage) string {
	if len(b) == 0 {
		return "null"
	}
	return string(b)
}

// anySelected reports whether a job of the manifest carries every label of
// sel: the set a prune keeps. When it is empty, the prune deletes every
// job sel picks, which is far more often a mistake (an empty stdin, a
// file of only comments, the wrong selector) than the wish.
func anySelected(specs []*Spec, sel Selector) bool {
	for _, s := range specs {
		if sel.Matches(s.Job.Labels) {
			return true
		}
	}
	return false
}

// emptyPrune is MakePlan's refusal of a prune from an empty set.
func emptyPrune(specs []*Spec, sel Selector) error {
	msg := "the manifest lists no jobs"
	if len(specs) > 0 {
		msg = fmt.Sprintf("none of the manifest's %d job(s) has the labels %s", len(specs), sel)
	}
	return &chronos.Error{Code: chronos.EINVALID,
		Message: msg + ": --prune would delete every job with the labels " + sel.String() + "; refused (pass --allow-empty to delete them all)",
		Fields:  map[string]string{"manifest": "lists no job the selector picks"}}
}
