package bench

import (
	"errors"
	"testing"
)

// TestDSNHostPort: a DSN the counting proxy can stand in for gives its
// TCP address; a Unix socket, or a connection that may use TLS (a URL
// without sslmode prefers it), says which it is, not that it is not TCP.
func TestDSNHostPort(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		dsn  string
		want string
		err  error
	}{
		{dsn: "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", want: "127.0.0.1:5432"},
		{dsn: "host=localhost port=5499 user=postgres sslmode=disable", want: "localhost:5499"},
		{dsn: "postgres://postgres@127.0.0.1:5432/postgres", err: errTLS},
		{dsn: "postgres://postgres@127.0.0.1:5432/postgres?sslmode=require", err: errTLS},
		{dsn: "host=/var/run/postgresql user=postgres sslmode=disable", err: errNoTCP},
	} {
		got, err := dsnHostPort(c.dsn)
		if got != c.want || !errors.Is(err, c.err) {
			t.Errorf("dsnHostPort(%q) = %q, %v; want %q, %v", c.dsn, got, err, c.want, c.err)
		}
	}
}
