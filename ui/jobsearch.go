package ui

import (
	"net/url"
	"sort"
	"strings"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// jobSearch is the job list's search and filters as typed, so the form
// shows them back; Filter is what they ask of sql.Jobs, the function behind
// GET /v1/jobs, with the same meaning: name_prefix (names that begin with
// it), q (a case-insensitive substring of the name or the description),
// label (key=value terms, all of which must match) and enabled.
type jobSearch struct {
	Prefix, Q, Labels, Enabled string
	Filter                     sql.JobFilter
}

// Active reports whether any filter is set.
func (f jobSearch) Active() bool {
	return f.Prefix != "" || f.Q != "" || f.Labels != "" || f.Enabled != ""
}

// Values are the filters as query parameters (no cursor).
func (f jobSearch) Values() url.Values {
	return setNonEmpty(url.Values{}, map[string]string{"name_prefix": f.Prefix, "q": f.Q, "label": f.Labels, "enabled": f.Enabled})
}

// parseJobSearch reads the filters. ?label= may repeat and each may hold
// several terms apart by spaces or commas (neither can be part of a label),
// so a link from a label on the page (label=env=prod) and the form's one
// field (label=env=prod team=core) both work. What does not parse is an
// EINVALID naming the field, with the API's limits.
func parseJobSearch(v url.Values) (jobSearch, error) {
	f := jobSearch{Prefix: strings.TrimSpace(v.Get("name_prefix")), Q: strings.TrimSpace(v.Get("q"))}
	bad := map[string]string{}
	for name, s := range map[string]string{"name_prefix": f.Prefix, "q": f.Q} {
		if len(s) > chronos.MaxNameLength {
			bad[name] = "must be 1 to 200 bytes"
		}
	}
	f.Filter.NamePrefix, f.Filter.Q = f.Prefix, f.Q
	var terms []string
	for _, l := range v["label"] {
		terms = append(terms, strings.FieldsFunc(l, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })...)
	}
	f.Labels = strings.Join(terms, " ")
	switch {
	case len(terms) > chronos.MaxLabels:
		bad["label"] = "at most 16 labels"
	case len(terms) > 0:
		sel, err := chronos.ParseSelector("label", terms)
		if err != nil {
			return f, err
		}
		f.Filter.Labels = sel
	}
	switch e := v.Get("enabled"); e {
	case "true", "false":
		on := e == "true"
		f.Enabled, f.Filter.Enabled = e, &on
	}
	if len(bad) > 0 {
		return f, chronos.InvalidFields(bad)
	}
	return f, nil
}

// label is one label of a job, for display.
type label struct{ K, V string }

// String is the label as a selector term, key=value.
func (l label) String() string { return l.K + "=" + l.V }

// sortedLabels returns a job's labels in key order.
func sortedLabels(m map[string]string) []label {
	out := make([]label, 0, len(m))
	for k, v := range m {
		out = append(out, label{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].K < out[j].K })
	return out
}
