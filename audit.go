package chronos

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// AuditAction is what an audit entry records.
type AuditAction string

// Audit actions.
const (
	AuditCreate  AuditAction = "create"
	AuditUpdate  AuditAction = "update"
	AuditDelete  AuditAction = "delete"
	AuditPause   AuditAction = "pause"
	AuditResume  AuditAction = "resume"
	AuditTrigger AuditAction = "trigger"
	AuditRedrive AuditAction = "redrive"
	// AuditBackfill: POST /v1/jobs/{id}/backfill created runs (its
	// changes hold "backfill": the range and the counts).
	AuditBackfill AuditAction = "backfill"
)

// AuditEntry is one change of a job's history: who (the API key's name),
// when, what, and for each changed field its value before and after, with
// secrets masked as job responses mask them.
type AuditEntry struct {
	ID      int64                  `json:"id"`
	JobID   int64                  `json:"job_id"`
	Action  AuditAction            `json:"action"`
	Actor   string                 `json:"actor"`
	At      time.Time              `json:"at"`
	RunID   *int64                 `json:"run_id"`
	Changes map[string]FieldChange `json:"changes"`
}

// FieldChange is a field's value before and after a change; Before is
// absent on create, After on delete.
type FieldChange struct {
	Before json.RawMessage `json:"before,omitempty"`
	After  json.RawMessage `json:"after,omitempty"`
}

// auditSkipped are job fields that are not the user's to change: ids,
// timestamps and the derived next_run_at and state.
var auditSkipped = map[string]bool{"id": true, "created_at": true, "updated_at": true, "next_run_at": true, "state": true}

// JobChanges compares two versions of a job field by field, as the API
// shows them (secrets masked): before nil is a create, after nil a delete.
// Fields of the wire form, including ones added later, are compared
// without a list to keep up to date.
func JobChanges(before, after *Job) map[string]FieldChange {
	b, a := wireFields(before), wireFields(after)
	out := map[string]FieldChange{}
	for k, v := range a {
		if auditSkipped[k] {
			continue
		}
		if old, ok := b[k]; !ok || !bytes.Equal(old, v) {
			out[k] = FieldChange{Before: b[k], After: v}
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok && !auditSkipped[k] {
			out[k] = FieldChange{Before: v}
		}
	}
	// A secret header's new value shows as the old mask: still a change.
	if before != nil && after != nil && !sameHeaders(before.Headers, after.Headers) {
		if _, ok := out["headers"]; !ok {
			out["headers"] = FieldChange{Before: b["headers"], After: a["headers"]}
		}
	}
	return out
}

func sameHeaders(x, y map[string]string) bool {
	if len(x) != len(y) {
		return false
	}
	for k, v := range x {
		if w, ok := y[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// wireFields is a job's JSON form, secrets masked, by field.
func wireFields(j *Job) map[string]json.RawMessage {
	if j == nil {
		return nil
	}
	raw, err := json.Marshal(j.Redacted())
	if err != nil {
		return nil // a Job always marshals
	}
	// json.Marshal writes compact JSON, so each field's raw value is
	// compact too: equal values are equal bytes.
	var m map[string]json.RawMessage
	_ = json.Unmarshal(raw, &m)
	return m
}

// CreationChanges is JobChanges(nil, j) already encoded as the audit
// entry's changes object ({"field": {"after": value}, ...}, keys sorted,
// as json.Marshal writes the map). Every create writes one, so it skips
// the map of FieldChanges and its second encoding: one encoding of the
// job and one pass over its fields.
func CreationChanges(j *Job) string {
	if j == nil {
		return "{}"
	}
	raw, err := json.Marshal(j.Redacted())
	if err != nil {
		return "{}" // a Job always marshals
	}
	fields := topFields(raw)
	order := creationOrderOf(fields)
	b := make([]byte, 0, len(raw)+len(order)*12)
	b = append(b, '{')
	for i, k := range order {
		if i > 0 {
			b = append(b, ',')
		}
		f := fields[k]
		b = append(b, '"')
		b = append(b, f.key...) // a field name from a struct tag: plain ASCII
		b = append(b, `":{"after":`...)
		b = append(b, f.value...)
		b = append(b, '}')
	}
	b = append(b, '}')
	return string(b)
}

// keyOrder is the order of a creation's audit entry for one sequence of
// keys: the indexes of the keys kept (not auditSkipped), sorted by key.
type keyOrder struct {
	keys  []string
	order []int
}

// creationOrder is the keyOrder of the keys json.Marshal last wrote for a
// job. They come in the struct's order, the same for every job (no field
// of Job is omitempty), so sorting them once serves every create; each
// call still checks that its keys are the cached ones.
var creationOrder atomic.Pointer[keyOrder]

// creationOrderOf is the order in which CreationChanges writes fields.
func creationOrderOf(fields []rawField) []int {
	if o := creationOrder.Load(); o != nil && len(o.keys) == len(fields) {
		same := true
		for i, f := range fields {
			if string(f.key) != o.keys[i] {
				same = false
				break
			}
		}
		if same {
			return o.order
		}
	}
	o := &keyOrder{keys: make([]string, len(fields))}
	for i, f := range fields {
		o.keys[i] = string(f.key)
		if !auditSkipped[o.keys[i]] {
			o.order = append(o.order, i)
		}
	}
	slices.SortFunc(o.order, func(a, b int) int { return strings.Compare(o.keys[a], o.keys[b]) })
	creationOrder.Store(o)
	return o.order
}

// rawField is one member of a JSON object: its key (unquoted, as
// written) and its value's bytes.
type rawField struct{ key, value []byte }

// topFields splits obj, a JSON object as json.Marshal writes it (compact,
// valid), into its members, in order, without decoding the values: the
// creation's audit entry needs each field's bytes only, and unmarshaling
// the job into a map was most of a create's cost in Go.
func topFields(obj []byte) []rawField {
	out := make([]rawField, 0, 48) // a Job has about 40 fields
	i := 1                         // past '{'
	for i < len(obj) && obj[i] != '}' {
		k0 := i + 1 // past the key's opening quote
		k1 := stringEnd(obj, k0)
		v0 := k1 + 2 // past '":'
		v1 := valueEnd(obj, v0)
		out = append(out, rawField{key: obj[k0:k1], value: obj[v0:v1]})
		i = v1
		if i < len(obj) && obj[i] == ',' {
			i++
		}
	}
	return out
}

// stringEnd is the index of the closing quote of the JSON string whose
// contents start at i.
func stringEnd(b []byte, i int) int {
	for ; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++ // the escaped byte
		case '"':
			return i
		}
	}
	return len(b)
}

// valueEnd is the index just past the compact JSON value starting at i:
// the ',' or '}' that ends it at its object's depth.
func valueEnd(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			i = stringEnd(b, i+1)
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
		case ',':
			if depth == 0 {
				return i
			}
		}
	}
	return len(b)
}

// DeletedJob is a deleted job as its audit history remembers it: the id
// its history is kept under, its name, and when and by whom it was
// deleted. It lets a job's history be found by name after the job is gone.
type DeletedJob struct {
	ID        int64     `json:"id"`
	Name      string    `json:"name"`
	DeletedAt time.Time `json:"deleted_at"`
	DeletedBy string    `json:"deleted_by"`
}
