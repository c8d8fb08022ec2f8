package chronos

import (
	"bytes"
	"encoding/json"
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

// DeletedJob is a deleted job as its audit history remembers it: the id
// its history is kept under, its name, and when and by whom it was
// deleted. It lets a job's history be found by name after the job is gone.
type DeletedJob struct {
	ID        int64     `json:"id"`
	Name      string    `json:"name"`
	DeletedAt time.Time `json:"deleted_at"`
	DeletedBy string    `json:"deleted_by"`
}
