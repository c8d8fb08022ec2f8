// Package pgdsn rewrites a Postgres connection string, in URL form
// (postgres://...) or keyword/value form (host=... dbname=...), keeping
// everything else in it: the one home of what the test databases
// (sql/sqltest) and the bench's throwaway databases, settings and proxy
// each did.
package pgdsn

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// isURL reports whether dsn is in URL form.
func isURL(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// WithDatabase returns dsn pointed at another database on the same
// server.
func WithDatabase(dsn, database string) (string, error) {
	if isURL(dsn) {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("parse database URL: %w", err)
		}
		u.Path = "/" + database
		u.RawPath = ""
		return u.String(), nil
	}
	// keyword/value form: a later keyword overrides an earlier one.
	return dsn + " dbname=" + database, nil
}

// WithParam returns dsn with the parameter name (a run-time setting such
// as synchronous_commit, or a pool setting such as pool_max_conns) set to
// value, replacing a value it had.
func WithParam(dsn, name, value string) string {
	if isURL(dsn) {
		if u, err := url.Parse(dsn); err == nil {
			q := u.Query()
			q.Set(name, value)
			u.RawQuery = q.Encode()
			return u.String()
		}
	}
	// keyword/value form: a later keyword overrides an earlier one.
	return dsn + " " + name + "=" + value
}

// WithHost returns dsn connecting to addr (host:port) instead, such as a
// proxy's.
func WithHost(dsn, addr string) string {
	if isURL(dsn) {
		if u, err := url.Parse(dsn); err == nil {
			u.Host = addr
			return u.String()
		}
	}
	host, port, _ := net.SplitHostPort(addr)
	return dsn + " host=" + host + " port=" + port
}
