package chronos

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Limits of a job's labels and description.
const (
	MaxLabels            = 16
	MaxDescriptionLength = 2000
)

// Label syntax, exactly Kubernetes' (k8s.io/apimachinery/pkg/util/validation:
// IsQualifiedName for keys, IsValidLabelValue for values; label_test.go
// checks both against it). A key is an optional DNS-subdomain prefix and a
// slash, then a name of at most 63 characters: alphanumerics, '-', '_' and
// '.', beginning and ending with an alphanumeric. A value is empty or such a
// name. Written out here because the domain package imports only the
// standard library.
var (
	labelNameRE    = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)
	dns1123LabelRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
)

const (
	maxLabelNameLength = 63
	maxLabelPrefix     = 253
)

// ValidLabelKey returns why k is not a valid label key, or "".
func ValidLabelKey(k string) string {
	name := k
	if prefix, rest, ok := strings.Cut(k, "/"); ok {
		if prefix == "" {
			return "prefix part must not be empty"
		}
		if !validDNSSubdomain(prefix) {
			return "prefix part must be a DNS subdomain (lower-case alphanumerics, '-' and '.', at most 253 characters)"
		}
		name = rest
	}
	if name == "" {
		return "name part must not be empty"
	}
	return labelWord(name, "name part ", "")
}

// ValidLabelValue returns why v is not a valid label value, or "".
func ValidLabelValue(v string) string {
	if v == "" {
		return ""
	}
	return labelWord(v, "", "empty or ")
}

// labelWord returns why s, a label's name part or a value, breaks their
// shared syntax, or "": the reason begins with subject and offers or
// beside the syntax.
func labelWord(s, subject, or string) string {
	switch {
	case len(s) > maxLabelNameLength:
		return fmt.Sprintf("%smust be at most %d characters", subject, maxLabelNameLength)
	case !labelNameRE.MatchString(s):
		return subject + "must be " + or + "alphanumerics, '-', '_' or '.', beginning and ending with an alphanumeric"
	}
	return ""
}

func validDNSSubdomain(s string) bool {
	if len(s) > maxLabelPrefix {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if !dns1123LabelRE.MatchString(part) { // Kubernetes bounds the whole, not each part
			return false
		}
	}
	return true
}

// validateLabels adds to f the first problem of labels, in key order.
func validateLabels(labels map[string]string, f map[string]string) {
	if len(labels) > MaxLabels {
		f["labels"] = fmt.Sprintf("at most %d labels", MaxLabels)
		return
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if why := ValidLabelKey(k); why != "" {
			f["labels"] = fmt.Sprintf("key %q: %s", k, why)
			return
		}
		if why := ValidLabelValue(labels[k]); why != "" {
			f["labels"] = fmt.Sprintf("value of %q: %s", k, why)
			return
		}
	}
}

// ParseSelector parses a label selector of the API: key=value terms, all
// of which must match. It returns EINVALID naming field when a term is
// malformed.
func ParseSelector(field string, terms []string) (map[string]string, error) {
	sel := map[string]string{}
	for _, t := range terms {
		k, v, ok := strings.Cut(t, "=")
		if !ok {
			return nil, InvalidFields(map[string]string{field: fmt.Sprintf("%q must be key=value", t)})
		}
		if why := ValidLabelKey(k); why != "" {
			return nil, InvalidFields(map[string]string{field: fmt.Sprintf("key %q: %s", k, why)})
		}
		if why := ValidLabelValue(v); why != "" {
			return nil, InvalidFields(map[string]string{field: fmt.Sprintf("value of %q: %s", k, why)})
		}
		if old, dup := sel[k]; dup && old != v {
			return nil, InvalidFields(map[string]string{field: fmt.Sprintf("key %q is given two values", k)})
		}
		sel[k] = v
	}
	return sel, nil
}
