package client

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/chronoshq/chronos"
)

// Selector is a label selector: every key must be present with its value.
type Selector map[string]string

// ParseSelector parses "k=v,k2=v2" (as kubectl's -l takes it); "" is the
// empty selector. Each term needs an "=" and a key.
func ParseSelector(s string) (Selector, error) {
	sel := Selector{}
	for _, term := range strings.Split(s, ",") {
		term = strings.TrimSpace(term)
		if term == "" {
			continue
		}
		k, v, ok := strings.Cut(term, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return nil, &chronos.Error{Code: chronos.EINVALID, Message: fmt.Sprintf("label selector term %q: want key=value", term),
				Fields: map[string]string{"selector": "want key=value[,key=value...]"}}
		}
		if old, dup := sel[k]; dup && old != v {
			return nil, &chronos.Error{Code: chronos.EINVALID, Message: fmt.Sprintf("label selector names %q twice", k),
				Fields: map[string]string{"selector": "a key may appear once"}}
		}
		sel[k] = v
	}
	return sel, nil
}

// Terms returns the selector as sorted "k=v" strings (the ?label= values).
func (s Selector) Terms() []string {
	out := make([]string, 0, len(s))
	for k, v := range s {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// String is the selector as ParseSelector reads it.
func (s Selector) String() string { return strings.Join(s.Terms(), ",") }

// Matches reports whether labels carry every term of s.
func (s Selector) Matches(labels map[string]string) bool {
	for k, v := range s {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// labelsOf returns a job's labels, read through its JSON form so that this
// package follows the root type as it grows.
func labelsOf(j *chronos.Job) map[string]string {
	b, err := json.Marshal(j)
	if err != nil {
		return nil
	}
	var v struct {
		Labels map[string]string `json:"labels"`
	}
	_ = json.Unmarshal(b, &v)
	return v.Labels
}

// LabelsOf returns a job's labels (nil when the server has none to show).
func LabelsOf(j *chronos.Job) map[string]string { return labelsOf(j) }
