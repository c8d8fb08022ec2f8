package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/chronoshq/chronos"
)

// Spec is one job of a manifest: its fields as the file gives them (the
// wire form of POST /v1/jobs), where they came from, and the job they
// describe once the server's defaults are applied.
type Spec struct {
	Name   string
	Source string                     // file, and position in it
	Fields map[string]json.RawMessage // as written
	Job    *chronos.Job               // defaults applied, validated
}

// ManifestError is a manifest refused whole: every problem of every job,
// each naming the file, the job and the field.
type ManifestError struct{ Problems []string }

// Error implements error.
func (e *ManifestError) Error() string {
	return fmt.Sprintf("%d problem(s); nothing was changed:\n  %s", len(e.Problems), strings.Join(e.Problems, "\n  "))
}

// LoadManifest reads jobs from each path: a YAML or JSON file, a directory
// (its *.yaml, *.yml and *.json files, in name order, not recursing) or
// "-" for stdin. A file holds one or more YAML documents, each a list of
// jobs, a mapping with a "jobs" list, or a single job. Every job is
// checked as the server would check it; one bad job refuses the lot with a
// *ManifestError.
func LoadManifest(paths []string, stdin io.Reader) ([]*Spec, error) {
	m, err := LoadManifestAll(paths, stdin)
	if err != nil {
		return nil, err
	}
	return m.Jobs, nil
}

// Manifest is what a set of files describes: jobs, and the named objects
// beside them (items with kind: Calendar or kind: Limit, see
// apply_objects.go), in file order.
type Manifest struct {
	Jobs    []*Spec
	Objects []*ObjectDoc
}

// LoadManifestAll is LoadManifest that also returns the named objects of
// the files: an item with "kind: Calendar" is a calendar (name,
// description, dates or ical), one with "kind: Limit" a limit (key,
// max_concurrency, rate, per_seconds); "kind: Job", or no kind, a job.
// Names are unique within a kind.
func LoadManifestAll(paths []string, stdin io.Reader) (*Manifest, error) {
	var files []string
	for _, p := range paths {
		if p == "-" {
			files = append(files, p)
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if ext := strings.ToLower(filepath.Ext(e.Name())); !e.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
				files = append(files, filepath.Join(p, e.Name()))
			}
		}
	}
	if len(files) == 0 {
		return nil, errors.New("no manifest files (want *.yaml, *.yml or *.json)")
	}
	var specs []*Spec
	var objects []*ObjectDoc
	var problems []string
	seen := map[string]string{}
	seenObj := map[[2]string]string{} // kind, name -> where
	for _, f := range files {
		name, data, err := readFile(f, stdin)
		if err != nil {
			return nil, err
		}
		raws, err := splitJobs(data)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		raws, objRaws, errs := splitKinds(raws, func(i int) string { return fmt.Sprintf("%s: item %d", name, i+1) })
		problems = append(problems, errs...)
		ordinal := map[string]int{} // per kind: "calendar 2"
		for _, raw := range objRaws {
			k, _ := kindNamed(kindOf(raw))
			ordinal[k.kind]++
			d, errs := checkObject(raw, fmt.Sprintf("%s: %s %d", name, k.noun, ordinal[k.kind]))
			problems = append(problems, errs...)
			if d == nil {
				continue
			}
			id := [2]string{d.Kind, d.Name}
			if first, dup := seenObj[id]; dup {
				problems = append(problems, fmt.Sprintf("%s: field %s: %q is also the %s of %s (%ss are unique)", d.Source, k.name, d.Name, k.name, first, k.name))
				continue
			}
			seenObj[id] = d.Source
			objects = append(objects, d)
		}
		for i, raw := range raws {
			s, errs := checkSpec(raw, fmt.Sprintf("%s: job %d", name, i+1))
			problems = append(problems, errs...)
			if s == nil {
				continue
			}
			if first, dup := seen[s.Name]; dup {
				problems = append(problems, fmt.Sprintf("%s: field name: %q is also the name of %s (names are unique)", s.Source, s.Name, first))
				continue
			}
			seen[s.Name] = s.Source
			specs = append(specs, s)
		}
	}
	if len(problems) > 0 {
		return nil, &ManifestError{Problems: problems}
	}
	return &Manifest{Jobs: specs, Objects: objects}, nil
}

// ReadObjects reads the jobs of one file ("-": stdin) as raw JSON
// objects, unchecked: what `chronos jobs create -f` and `update -f` send.
func ReadObjects(path string, stdin io.Reader) ([]json.RawMessage, error) {
	name, data, err := readFile(path, stdin)
	if err != nil {
		return nil, err
	}
	raws, err := splitJobs(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return raws, nil
}

func readFile(path string, stdin io.Reader) (name string, data []byte, err error) {
	if path == "-" {
		if stdin == nil {
			return "<stdin>", nil, nil
		}
		data, err = io.ReadAll(stdin)
		return "<stdin>", data, err
	}
	data, err = os.ReadFile(path)
	return path, data, err
}

// splitJobs decodes every YAML document of data into the raw JSON of each
// job it holds.
func splitJobs(data []byte) ([]json.RawMessage, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []json.RawMessage
	for {
		var doc any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, errors.New(yaml.FormatError(err, false, false))
		}
		switch d := doc.(type) {
		case nil:
			continue
		case []any:
			for _, j := range d {
				out = append(out, mustJSON(j))
			}
		case map[string]any:
			if jobs, ok := d["jobs"]; ok && isJobList(d) {
				list, ok := jobs.([]any)
				if !ok {
					return nil, errors.New(`"jobs" must be a list of jobs`)
				}
				for _, j := range list {
					out = append(out, mustJSON(j))
				}
				continue
			}
			out = append(out, mustJSON(d))
		default:
			return nil, fmt.Errorf("a document must be a job, a list of jobs or {jobs: [...]}, not %T", doc)
		}
	}
}

// isJobList tells a {jobs: [...]} document (a page of `chronos jobs list
// -o yaml` too, with its next_cursor) from a job.
func isJobList(d map[string]any) bool {
	for k := range d {
		if k != "jobs" && k != "next_cursor" {
			return false
		}
	}
	return true
}

// serverFields are the fields of a job the server sets and a job response
// shows (GET /v1/jobs), that a create or update does not take. A spec may
// hold them, so that the output of `chronos jobs list -o yaml` is a
// manifest (a backup restores with apply); they are dropped unread.
var serverFields = []string{"id", "created_at", "updated_at", "next_run_at", "state", "signing_secrets"}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil { // a YAML value JSON cannot hold (a map with non-string keys)
		b, _ = json.Marshal(fmt.Sprint(v))
	}
	return b
}

// specFields are the fields a job spec may hold: the JSON names of
// chronos.JobUpdate, so a field the root type gains is accepted at once.
func specFields() map[string]bool {
	out := map[string]bool{}
	t := reflect.TypeOf(chronos.JobUpdate{})
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out[name] = true
		}
	}
	return out
}

// checkSpec checks one job as the server checks a create and returns it,
// or the problems, each naming where, the job and the field.
func checkSpec(raw json.RawMessage, where string) (*Spec, []string) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, []string{where + ": a job must be a mapping of fields"}
	}
	var name string
	_ = json.Unmarshal(fields["name"], &name)
	if name != "" {
		where = fmt.Sprintf("%s (%s)", where, name)
	}
	for _, f := range serverFields {
		delete(fields, f)
	}
	var problems []string
	known := specFields()
	var keys []string
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !known[k] {
			problems = append(problems, fmt.Sprintf("%s: field %s: unknown field", where, k))
		}
	}
	problems = append(problems, redactedHeaders(fields, where)...)
	if len(problems) > 0 {
		return nil, problems
	}
	raw, _ = json.Marshal(fields) // without the server's fields
	var u chronos.JobUpdate
	if err := json.Unmarshal(raw, &u); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, []string{fmt.Sprintf("%s: field %s: must be %s, not a JSON %s", where, te.Field, te.Type, te.Value)}
		}
		return nil, []string{fmt.Sprintf("%s: %v", where, err)}
	}
	j, err := NewJob(&u)
	if err != nil {
		var ae *chronos.Error
		if errors.As(err, &ae) && len(ae.Fields) > 0 {
			var fs []string
			for f := range ae.Fields {
				fs = append(fs, f)
			}
			sort.Strings(fs)
			for _, f := range fs {
				problems = append(problems, fmt.Sprintf("%s: field %s: %s", where, f, ae.Fields[f]))
			}
			return nil, problems
		}
		return nil, []string{fmt.Sprintf("%s: %v", where, err)}
	}
	return &Spec{Name: j.Name, Source: where, Fields: fields, Job: j}, nil
}

// NewJob builds the job a create request describes, as POST /v1/jobs
// does (chronos.NewJob: the defaults, then the Set fields of u, then
// validation). It lets a manifest be refused before anything is sent.
func NewJob(u *chronos.JobUpdate) (*chronos.Job, error) { return chronos.NewJob(u) }

// redactedHeaders refuses header values that are chronos.Redacted: the
// API shows every secret header so (a list or get never returns the
// value), and a manifest made from such output, a backup, would store the
// placeholder as the job's credential on a server that lacks the job.
func redactedHeaders(fields map[string]json.RawMessage, where string) []string {
	var h map[string]any
	if json.Unmarshal(fields["headers"], &h) != nil {
		return nil // not a mapping: the type check says so
	}
	var names []string
	for k, v := range h {
		if v == chronos.Redacted {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	var problems []string
	for _, k := range names {
		problems = append(problems, fmt.Sprintf("%s: field headers.%s: is %s, the placeholder the API shows for a secret value, not the value: "+
			"write the real value in the file (a job list or get never shows it)", where, k, chronos.Redacted))
	}
	return problems
}
