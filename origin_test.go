package chronos

import (
	"testing"

	"github.com/chronoshq/chronos/internal/fixtures"
)

// testdata/origins.json holds target URLs with the origin each names.
// sql's tests run the same file through chronos_origin, so Go and
// Postgres agree on every case.
func TestOrigin(t *testing.T) {
	t.Parallel()
	for _, c := range fixtures.Origins(t, ".") {
		if got := Origin(c.URL); got != c.Origin {
			t.Errorf("Origin(%q) = %q, want %q", c.URL, got, c.Origin)
		}
	}
	for _, u := range []string{"", "example.com", "::", "http://"} {
		if got := Origin(u); got != "" {
			t.Errorf("Origin(%q) = %q, want empty", u, got)
		}
	}
}
