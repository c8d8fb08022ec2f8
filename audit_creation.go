package chronos

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
)

// CreationChanges is JobChanges(nil, j) already encoded as the audit
// entry's changes object ({"field": {"after": value}, ...}, keys sorted,
// as json.Marshal writes the map), byte for byte. Every create writes
// one, so it neither builds the map of FieldChanges nor encodes the job
// and splits it again: it walks creationPlan, writing the values most
// jobs hold (plain strings, numbers, booleans, times, nulls and empty
// maps and lists) itself, and handing any other value to json.Marshal.
// Encoding the job with reflection and splitting it was a tenth of a
// batch create's CPU (issue 21).
func CreationChanges(j *Job) string {
	if j == nil {
		return "{}"
	}
	plan := creationPlan()
	if plan == nil {
		return string(mustMarshal(JobChanges(nil, j)))
	}
	if j.Headers == nil || len(j.Headers) > 0 {
		j = j.Redacted() // masks secrets, and shows no headers as {}
	}
	b, ok := appendObject(make([]byte, 0, 1024), j, plan, "}")
	if !ok {
		return string(mustMarshal(JobChanges(nil, j)))
	}
	return string(b)
}

// creationPlan is Job's audited members in key order, each prefix
// `"key":{"after":`, or nil where jobWireFields is.
var creationPlan = sync.OnceValue(func() []wireField {
	fields := jobWireFields()
	if fields == nil {
		return nil
	}
	var plan []wireField
	for _, f := range fields {
		if !auditSkipped[f.key] {
			plan = append(plan, f.withPrefix(`"%s":{"after":`))
		}
	}
	slices.SortFunc(plan, func(a, b wireField) int { return strings.Compare(a.key, b.key) })
	return plan
})

// mustMarshal is json.Marshal of a value that always marshals (a map of
// FieldChanges), "{}" should it not.
func mustMarshal(v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		return []byte("{}")
	}
	return raw
}
