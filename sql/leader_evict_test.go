package sql_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// holdAsOldBinary takes the leadership lock as a binary from before
// migration 017 did: a plain session named instance, no marker.
func holdAsOldBinary(t *testing.T, dsn, instance string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = instance
	conn, err := pgx.ConnectConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if _, err := conn.Exec(t.Context(), "SELECT pg_advisory_lock($1)", sql.LeaderKeyForTest); err != nil {
		t.Fatal(err)
	}
	return conn
}

// takeLeadWithin tries for the lock as the reactor does (a try, then waits
// in the queue) until it leads or d passes.
func takeLeadWithin(t *testing.T, c *sql.LeaderConn, d time.Duration) (bool, []string) {
	t.Helper()
	var evicted []string
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		ok, err := c.TryLock(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if e := c.Evicted(); e != "" {
			evicted = append(evicted, e)
		}
		if ok {
			return true, evicted
		}
		if ok, err = c.WaitLock(t.Context(), 200*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if e := c.Evicted(); e != "" {
			evicted = append(evicted, e)
		}
		if ok {
			return true, evicted
		}
	}
	return false, evicted
}

// TestFollowerEndsAnOutdatedLeader: a binary from before migration 017
// leads on, blind to the schema's minimum (nothing tells it to step down:
// it ignored ends_at and jitter in the rolling-upgrade test). A follower
// that may lead ends its session and takes the lock.
func TestFollowerEndsAnOutdatedLeader(t *testing.T) {
	t.Parallel()
	dsn := sqltest.NewURL(t)
	old := holdAsOldBinary(t, dsn, "chronos-pre017")
	follower := sqltest.Leader(t, t.Context(), dsn, "chronos-new")
	ok, evicted := takeLeadWithin(t, follower, 10*time.Second)
	if !ok {
		t.Fatalf("the follower never took the lock from a binary too old to step down (evicted %v)", evicted)
	}
	// Named once, or again by the wait that followed the try when the
	// ended backend had not exited yet (ending it twice is harmless).
	if len(evicted) == 0 {
		t.Fatal("the follower took the lock without ending the old binary's session")
	}
	for _, e := range evicted {
		if !strings.Contains(e, "chronos-pre017") {
			t.Fatalf("evicted %v, want only the old binary", evicted)
		}
	}
	if err := old.Ping(t.Context()); err == nil {
		t.Fatal("the old binary's session still answers")
	}
}

// TestFollowerKeepsAnAllowedLeader: a leader that steps down by itself
// (it holds the marker), even one not registered yet, and a registered
// binary of a level the schema lets lead, keep the lock.
func TestFollowerKeepsAnAllowedLeader(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		register bool // a chronos_instances row at this binary's level
		marker   bool // a leadership connection of this binary
	}{
		{name: "this binary, not registered yet", marker: true},
		{name: "an older registered binary the schema allows", register: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dsn := sqltest.NewURL(t)
			db := sqltest.Open(t, dsn, "observer")
			if tc.register {
				if _, err := db.RegisterInstance(t.Context(), "chronos-allowed", "v-old"); err != nil {
					t.Fatal(err)
				}
			}
			if tc.marker {
				sqltest.Leading(t, t.Context(), dsn, "chronos-allowed")
			} else {
				holdAsOldBinary(t, dsn, "chronos-allowed")
			}
			follower := sqltest.Leader(t, t.Context(), dsn, "chronos-follower")
			if ok, evicted := takeLeadWithin(t, follower, time.Second); ok || len(evicted) != 0 {
				t.Fatalf("the follower took the lock (%v) or ended the leader's session (%v)", ok, evicted)
			}
			if l, err := db.Leader(t.Context()); err != nil || l != "chronos-allowed" {
				t.Fatalf("leader %q (%v), want chronos-allowed", l, err)
			}
		})
	}
}
