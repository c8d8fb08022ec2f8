package sql_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// TestTooOldNeverLeads: when the schema requires a newer binary to lead
// (chronos_compat), the leader's connection neither takes the lock nor
// queues for it, says why (upgrade), and a leader whose minimum is raised
// under it fails its next ping, so it steps down.
func TestTooOldNeverLeads(t *testing.T) {
	db, ctx, dsn := parallelOpen(t, "observer")
	if err := db.CheckCompat(ctx); err != nil {
		t.Fatalf("a fresh schema refuses this binary: %v", err)
	}
	if sql.SchemaLevel() < 14 {
		t.Fatalf("schema level %d", sql.SchemaLevel())
	}
	leader := sqltest.Leading(t, ctx, dsn, "old")

	// A migration raises the minimum past this binary.
	if _, err := db.Pool.Exec(ctx, `UPDATE chronos_compat SET min_lead_level = $1, reason = 'test'`, sql.SchemaLevel()+1); err != nil {
		t.Fatal(err)
	}
	err := leader.Ping(ctx)
	var tooOld *sql.TooOldError
	if !errors.As(err, &tooOld) || !strings.Contains(err.Error(), "upgrade") {
		t.Fatalf("ping of a leader below the minimum: %v, want a TooOldError that says to upgrade", err)
	}
	if err := db.CheckCompat(ctx); !errors.As(err, &tooOld) {
		t.Fatalf("CheckCompat: %v", err)
	}
	if err := leader.Close(ctx); err != nil { // the leader steps down: its session ends
		t.Fatal(err)
	}

	old := sqltest.Leader(t, ctx, dsn, "old")
	if ok, err := old.TryLock(ctx); err != nil || ok {
		t.Fatalf("a binary below the minimum took the lock: %v %v", ok, err)
	}
	if !errors.As(old.TooOld(), &tooOld) || tooOld.Compat.MinLeadLevel != sql.SchemaLevel()+1 {
		t.Fatalf("TooOld() = %v", old.TooOld())
	}
	start := time.Now()
	if ok, err := old.WaitLock(ctx, 200*time.Millisecond); err != nil || ok {
		t.Fatalf("a binary below the minimum waited for the lock and got it: %v %v", ok, err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("WaitLock returned after %s, before its timeout: a follower would spin", d)
	}
	if l, err := db.Leader(ctx); err != nil || l != "" {
		t.Fatalf("leader %q (%v), want none", l, err)
	}

	// The minimum back at this binary: it leads again.
	if _, err := db.Pool.Exec(ctx, `UPDATE chronos_compat SET min_lead_level = $1`, sql.SchemaLevel()); err != nil {
		t.Fatal(err)
	}
	if ok, err := old.TryLock(ctx); err != nil || !ok {
		t.Fatalf("lock at the minimum: %v %v", ok, err)
	}
	if old.TooOld() != nil {
		t.Fatalf("TooOld() = %v after leading", old.TooOld())
	}
}

// TestRegisterInstance: an instance's version is recorded and refreshed,
// and registering returns the schema's minimum.
func TestRegisterInstance(t *testing.T) {
	db, ctx := parallelDB(t)
	c, err := db.RegisterInstance(ctx, "i-1", "v1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if c.MinLeadLevel < 14 || c.MinLeadLevel > sql.SchemaLevel() || c.Check(sql.SchemaLevel()) != nil {
		t.Fatalf("compat %+v at level %d", c, sql.SchemaLevel())
	}
	if _, err := db.RegisterInstance(ctx, "i-1", "v1.1.0"); err != nil {
		t.Fatal(err)
	}
	var v string
	var level int
	if err := db.Pool.QueryRow(ctx, `SELECT version, schema_level FROM chronos_instances WHERE instance = 'i-1'`).Scan(&v, &level); err != nil {
		t.Fatal(err)
	}
	if v != "v1.1.0" || level != sql.SchemaLevel() {
		t.Fatalf("registered %s level %d", v, level)
	}
}
