package http

import (
	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// maxSearchLength bounds ?name_prefix= and ?q=.
const maxSearchLength = chronos.MaxNameLength

// searchFilter reads the search filters of GET /v1/jobs into f:
// ?name_prefix=, ?q= (a case-insensitive substring of the name or the
// description) and ?label=key=value, repeatable, all of which must match.
func searchFilter(f *sql.JobFilter, q map[string]string, labels []string) error {
	bad := map[string]string{}
	for _, name := range []string{"name_prefix", "q"} {
		if v, ok := q[name]; ok && (v == "" || len(v) > maxSearchLength) {
			bad[name] = "must be 1 to 200 bytes"
		}
	}
	if len(bad) > 0 {
		return chronos.InvalidFields(bad)
	}
	f.NamePrefix, f.Q = q["name_prefix"], q["q"]
	if len(labels) > chronos.MaxLabels {
		return invalid("label", "at most 16 labels")
	}
	if len(labels) > 0 {
		sel, err := chronos.ParseSelector("label", labels)
		if err != nil {
			return err
		}
		f.Labels = sel
	}
	return nil
}
