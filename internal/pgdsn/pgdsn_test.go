package pgdsn_test

import (
	"testing"

	"github.com/chronoshq/chronos/internal/pgdsn"
)

// Both forms are rewritten, and whatever else the DSN says is kept.
func TestRewrites(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, got, want string }{
		{"URL, database", must(t)(pgdsn.WithDatabase("postgres://u:p@db:5432/a?sslmode=disable", "b")), "postgres://u:p@db:5432/b?sslmode=disable"},
		{"keywords, database", must(t)(pgdsn.WithDatabase("host=db dbname=a", "b")), "host=db dbname=a dbname=b"},
		{"URL, host", pgdsn.WithHost("postgresql://u@db:5432/a?x=1", "127.0.0.1:6000"), "postgresql://u@127.0.0.1:6000/a?x=1"},
		{"URL, parameter", pgdsn.WithParam("postgres://db/a?sslmode=disable&pool_max_conns=9", "pool_max_conns", "4"), "postgres://db/a?pool_max_conns=4&sslmode=disable"},
		{"keywords, parameter", pgdsn.WithParam("host=db dbname=a", "synchronous_commit", "off"), "host=db dbname=a synchronous_commit=off"},
		{"keywords, host", pgdsn.WithHost("host=db port=5432 dbname=a", "127.0.0.1:6000"), "host=db port=5432 dbname=a host=127.0.0.1 port=6000"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: %q, want %q", c.name, c.got, c.want)
		}
	}
	if _, err := pgdsn.WithDatabase("postgres://db:port/a", "b"); err == nil {
		t.Error("a URL that does not parse was rewritten")
	}
}

func must(t *testing.T) func(string, error) string {
	return func(s string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}
