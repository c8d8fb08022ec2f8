package main

import (
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chronoshq/chronos/internal/pgdsn"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// A database or role that does not exist fails at once, saying so, rather
// than being retried for DATABASE_CONNECT_TIMEOUT as "cannot reach".
func TestConnectFailsFastOnPermanentErrors(t *testing.T) {
	t.Parallel()
	base := os.Getenv(sqltest.EnvVar)
	if base == "" {
		t.Fatal("TEST_DATABASE_URL is not set (make test sets it)")
	}
	noDB, err := pgdsn.WithDatabase(base, "chronos_no_such_database")
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(noDB)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User("chronos_no_such_role")
	noRole := u.String()
	for _, tc := range []struct{ dsn, want string }{
		{noDB, "the database does not exist"},
		{noRole, "the role does not exist"},
	} {
		began := time.Now()
		code, _, errOut := runCmd(t, map[string]string{"DATABASE_URL": tc.dsn, "DATABASE_CONNECT_TIMEOUT": "60s", "LOG_FORMAT": "text"}, "migrate")
		took := time.Since(began)
		if code != 1 || !strings.Contains(errOut, "cannot connect to DATABASE_URL: "+tc.want) || strings.Contains(errOut, "cannot reach") {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 saying %q", tc.dsn, code, errOut, tc.want)
		}
		if took > 30*time.Second {
			t.Errorf("%s: gave up after %s: it was retried", tc.dsn, took)
		}
	}
}
