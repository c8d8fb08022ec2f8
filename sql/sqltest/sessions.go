package sqltest

import (
	"context"
	"testing"
	"time"

	"github.com/chronoshq/chronos/sql"
)

// Terminate ends the server session of db's database named appName (its
// application_name), failing t unless there was exactly one: a test that
// cuts one connection (a listener's, a leader's) under the code holding
// it.
func Terminate(t testing.TB, db *sql.DB, appName string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int
	if err := db.Pool.QueryRow(ctx, `
		SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		 WHERE datname = current_database() AND application_name = $1`, appName).Scan(&n); err != nil {
		t.Fatalf("terminate %s: %v", appName, err)
	}
	if n != 1 {
		t.Fatalf("terminated %d sessions named %s, want exactly 1", n, appName)
	}
}
