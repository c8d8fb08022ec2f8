//go:build linux

package faults

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// TestPostgresFailover: two instances on a multi-host DATABASE_URL
// (primary, then a streaming synchronous standby; target_session_attrs=
// read-write) under load; the primary is killed (kill -9 of every
// process) and the standby promoted: the instances reconnect to it, elect
// a leader and carry on; every trigger the API acknowledged is delivered.
// Reports the time from the promotion to the first delivery.
func TestPostgresFailover(t *testing.T) {
	skipUnlessLong(t)
	primary := newPGServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	primaryDSN := primary.createDB(t, "chronos")
	if err := sql.Migrate(ctx, primaryDSN); err != nil {
		t.Fatal(err)
	}
	standby := newStandby(t, primary)
	admin, err := pgx.Connect(ctx, primary.url("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"ALTER SYSTEM SET synchronous_standby_names = '*'", "SELECT pg_reload_conf()"} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	waitFor(t, 30*time.Second, "the standby to replicate synchronously", func() bool {
		var state string
		err := admin.QueryRow(ctx, "SELECT sync_state FROM pg_stat_replication LIMIT 1").Scan(&state)
		return err == nil && state == "sync"
	})
	admin.Close(ctx)

	dsn := fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/chronos?sslmode=disable&target_session_attrs=read-write",
		primary.port, standby.port)
	cfg := defaultClusterConfig()
	cfg.instances = 2
	c := newClusterWith(t, cfg, dsn, func(string) []string { return nil }, "a", "b")

	body := jobBody("every-second", c.target.srv.URL)
	body["cron_expr"] = "* * * * * *"
	var cron chronos.Job
	if code, err := c.api(ctx, http.MethodPost, "/v1/jobs", body, &cron); err != nil || code != http.StatusCreated {
		t.Fatalf("create cron job: HTTP %d, %v", code, err)
	}
	var manual []int64
	for i := range 3 {
		b := jobBody(fmt.Sprintf("manual-%d", i), c.target.srv.URL)
		b["cron_expr"] = "0 0 1 1 *"
		var j chronos.Job
		if code, err := c.api(ctx, http.MethodPost, "/v1/jobs", b, &j); err != nil || code != http.StatusCreated {
			t.Fatalf("create job: HTTP %d, %v", code, err)
		}
		manual = append(manual, j.ID)
	}
	tr := &triggers{c: c}
	stopLoad := tr.keepFiring(ctx, manual)
	time.Sleep(3 * time.Second)

	crashed := primary.crash(t)
	promoteConn, err := pgx.Connect(ctx, standby.url("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := promoteConn.Exec(ctx, "SELECT pg_promote(true, 60)"); err != nil {
		t.Fatalf("promote: %v", err)
	}
	promoted := time.Now()
	promoteConn.Close(ctx)
	t.Logf("primary killed; standby promoted %s later", promoted.Sub(crashed).Round(time.Millisecond))

	var firstDelivery time.Time
	waitFor(t, 60*time.Second, "a delivery after the promotion", func() bool {
		for _, d := range c.target.deliveries() {
			if d.At.After(promoted) && (firstDelivery.IsZero() || d.At.Before(firstDelivery)) {
				firstDelivery = d.At
			}
		}
		return !firstDelivery.IsZero()
	})
	leader := c.waitLeader(t, 60*time.Second)
	leaderAt := time.Now()
	var firstAcked time.Time
	waitFor(t, 60*time.Second, "a trigger acknowledged after the promotion", func() bool {
		return len(tr.acked()) > 0 && tr.lastAt().After(promoted)
	})
	firstAcked = tr.lastAt()
	time.Sleep(5 * time.Second) // carry on under load
	stopLoad()
	c.pause(t, ctx, cron.ID)
	drain(t, c, 90*time.Second)

	runs := loadRuns(t, ctx, c)
	byID, _ := indexRuns(runs)
	delivered := c.target.deliveredRuns()
	lost := 0
	for _, id := range tr.acked() {
		if r := byID[id]; r == nil || r.Status != "succeeded" || !delivered[id] {
			lost++
			t.Errorf("acknowledged trigger run %d lost: %+v delivered %v", id, r, delivered[id])
		}
	}
	after := 0
	for _, r := range runs {
		if r.Job == cron.ID && r.ScheduledAt.After(promoted) {
			after++
		}
	}
	if after == 0 {
		t.Error("no cron occurrence materialized after the promotion")
	}
	t.Logf("failover: first delivery %s after the promotion, leader %s known %s after it, first trigger acknowledged %s after it; "+
		"%d triggers acknowledged, %d lost, %d trigger failures, %d cron runs after the promotion",
		firstDelivery.Sub(promoted).Round(time.Millisecond), leader, leaderAt.Sub(promoted).Round(time.Millisecond),
		firstAcked.Sub(promoted).Round(time.Millisecond), len(tr.acked()), lost, tr.failed(), after)
}

// waitFor polls cond until it holds, failing the test after within.
func waitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
