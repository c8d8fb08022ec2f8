package sql_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

func TestLeaderLock(t *testing.T) {
	db, ctx, dsn := parallelOpen(t, "observer")
	a := sqltest.Leader(t, ctx, dsn, "instance-a")
	b := sqltest.Leader(t, ctx, dsn, "instance-b")

	leader := func() string {
		t.Helper()
		l, err := db.Leader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	try := func(c *sql.LeaderConn) bool {
		t.Helper()
		ok, err := c.TryLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if l := leader(); l != "" {
		t.Fatalf("leader %q before anyone locked", l)
	}
	if !try(a) {
		t.Fatal("a could not lock")
	}
	if !try(a) { // again: must not stack the lock
		t.Fatal("a could not lock again")
	}
	if try(b) {
		t.Fatal("b locked while a holds the lock")
	}
	if l := leader(); l != "instance-a" {
		t.Fatalf("leader %q, want instance-a", l)
	}
	if err := a.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Unlock(ctx); err == nil {
		t.Fatal("unlocking a lock not held is not an error")
	}
	// One Unlock after two TryLocks let go: b can lead now.
	if !try(b) {
		t.Fatal("b could not lock after a unlocked")
	}
	if l := leader(); l != "instance-b" {
		t.Fatalf("leader %q, want instance-b", l)
	}
	// Closing the connection releases the lock.
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !try(a) {
		if time.Now().After(deadline) {
			t.Fatal("lock not released by closing its connection")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestAnnounceResignation(t *testing.T) {
	db, ctx, dsn := parallelOpen(t, "x")
	l := sqltest.Connect(t, ctx, dsn)
	if _, err := l.Exec(ctx, "LISTEN chronos_leader"); err != nil {
		t.Fatal(err)
	}
	if err := db.AnnounceResignation(ctx, `in"st`); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	n, err := l.WaitForNotification(wctx)
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]string
	if err := json.Unmarshal([]byte(n.Payload), &p); err != nil || p["op"] != "resigned" || p["instance"] != `in"st` {
		t.Fatalf("payload %s (%v)", n.Payload, err)
	}
}
