package tests

// How a ticket test opens: in parallel with the others, on a database of
// its own, as the API server (parallelAPI), the data layer (smOpen) or the
// URL instances open their pools with (parallelDSN).

import (
	"context"
	"testing"

	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// parallelAPI opens most API tickets: the test runs in parallel with the
// others, against an apiServer of its own.
func parallelAPI(t *testing.T) *apiServer {
	t.Helper()
	t.Parallel()
	return newAPIServer(t)
}

// smOpen opens the state-machine tickets: the test runs in parallel with
// the others, on a database of its own, its calls in the test's context.
func smOpen(t *testing.T) (*sql.DB, context.Context) {
	t.Helper()
	t.Parallel()
	return sqltest.New(t), t.Context()
}

// parallelDSN opens the tickets that run instances of their own: the test
// runs in parallel with the others, on a database of its own, named by the
// URL the instances open their pools with.
func parallelDSN(t *testing.T) string {
	t.Helper()
	t.Parallel()
	return sqltest.NewURL(t)
}
