package chronos

import (
	"encoding/json"
	"os"
	"testing"
)

// testdata/origins.json holds target URLs with the origin each names.
// sql's tests run the same file through chronos_origin, so Go and
// Postgres agree on every case.
func TestOrigin(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/origins.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct{ URL, Origin string }
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
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
