package chronos_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/chronoshq/chronos"
)

// labelCases are keys and values on both sides of each rule.
var labelCases = []string{
	"", "a", "A", "0", "team", "Team_1.x-y", "-a", "a-", "_a", "a_", ".a", "a.", "a b", "a/b", "a//b", "/a", "a/",
	"example.com/team", "Example.com/team", "ex_ample.com/team", "-example.com/a", "example-.com/a", "a.b.c/d",
	"example.com/", "a/b/c", "é", "a\x00", strings.Repeat("a", 63), strings.Repeat("a", 64),
	strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "/x", strings.Repeat("a", 64) + ".com/x",
	strings.Repeat("a.", 126) + "a/x", strings.Repeat("a.", 127) + "a/x", "x/" + strings.Repeat("a", 63), "x/" + strings.Repeat("a", 64),
}

// TestLabelSyntaxIsKubernetes: label keys and values are judged exactly as
// Kubernetes judges them.
func TestLabelSyntaxIsKubernetes(t *testing.T) {
	t.Parallel()
	for _, c := range labelCases {
		if got, want := chronos.ValidLabelKey(c) == "", len(validation.IsQualifiedName(c)) == 0; got != want {
			t.Errorf("key %q: valid %v, Kubernetes says %v (%v)", c, got, want, validation.IsQualifiedName(c))
		}
		if got, want := chronos.ValidLabelValue(c) == "", len(validation.IsValidLabelValue(c)) == 0; got != want {
			t.Errorf("value %q: valid %v, Kubernetes says %v", c, got, want)
		}
	}
}

// FuzzLabelSyntax: any string, judged as Kubernetes does.
func FuzzLabelSyntax(f *testing.F) {
	for _, c := range labelCases {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := chronos.ValidLabelKey(s) == "", len(validation.IsQualifiedName(s)) == 0; got != want {
			t.Errorf("key %q: valid %v, Kubernetes says %v", s, got, want)
		}
		if got, want := chronos.ValidLabelValue(s) == "", len(validation.IsValidLabelValue(s)) == 0; got != want {
			t.Errorf("value %q: valid %v, Kubernetes says %v", s, got, want)
		}
	})
}
