package ui

import (
	"bytes"
	"encoding/json"
	"sort"
	"unicode/utf8"

	"github.com/chronoshq/chronos"
)

// History paging: a page of a job's audit history on the job page.
const (
	historyPerPage = 15
	// maxShownValue bounds a value shown before or after a change (a
	// payload may hold 64 KiB): the page stays small; the API has it all.
	maxShownValue = 160
)

// auditRow is one entry of a job's history as the job page shows it.
type auditRow struct {
	E       chronos.AuditEntry
	Changes []changeRow
}

// changeRow is one changed field: its value before and after, as text
// (a non-empty JSON string unquoted, anything else as JSON), "" when
// absent.
type changeRow struct {
	Field, Before, After string
}

// auditRows turns History's entries into rows, fields in name order.
func auditRows(entries []chronos.AuditEntry) []auditRow {
	out := make([]auditRow, len(entries))
	for i, e := range entries {
		fields := make([]string, 0, len(e.Changes))
		for k := range e.Changes {
			fields = append(fields, k)
		}
		sort.Strings(fields)
		row := auditRow{E: e}
		for _, k := range fields {
			ch := e.Changes[k]
			row.Changes = append(row.Changes, changeRow{Field: k, Before: shownValue(ch.Before), After: shownValue(ch.After)})
		}
		out[i] = row
	}
	return out
}

// shownValue is a JSON value as text, cut at maxShownValue characters.
func shownValue(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	s := string(raw)
	var str string
	if raw[0] == '"' && json.Unmarshal(raw, &str) == nil && str != "" {
		s = str
	}
	if utf8.RuneCountInString(s) > maxShownValue {
		r := []rune(s)
		s = string(r[:maxShownValue]) + "…"
	}
	return s
}
