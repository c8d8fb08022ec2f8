package sql_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// listener collects the notifications of chronos_jobs and chronos_runs.
type listener struct {
	t    *testing.T
	conn *pgx.Conn
}

func listen(t *testing.T, dsn string) *listener {
	t.Helper()
	conn := sqltest.Connect(t, t.Context(), dsn)
	for _, ch := range []string{"chronos_jobs", "chronos_runs"} {
		if _, err := conn.Exec(t.Context(), "LISTEN "+ch); err != nil {
			t.Fatal(err)
		}
	}
	return &listener{t: t, conn: conn}
}

// drain returns what arrived, waiting a moment for the last of it.
// Notifications are delivered at commit, before the notifying call
// returns, so a short wait only guards against socket latency.
func (l *listener) drain() []*pgconn.Notification {
	l.t.Helper()
	var got []*pgconn.Notification
	for {
		ctx, cancel := context.WithTimeout(l.t.Context(), 150*time.Millisecond)
		n, err := l.conn.WaitForNotification(ctx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
			return got
		}
		if err != nil {
			l.t.Fatal(err)
		}
		got = append(got, n)
	}
}

type runsPayload struct {
	Count       int        `json:"count"`
	RunID       int64      `json:"run_id"`
	JobID       int64      `json:"job_id"`
	Status      string     `json:"status"`
	AvailableAt *time.Time `json:"available_at"`
}

func TestNotifyPayloads(t *testing.T) {
	db, ctx, dsn := parallelOpen(t, "t")
	l := listen(t, dsn)

	// Jobs: created (with the new job's next_run_at, which tells the
	// materializer whether to wake) / updated / deleted, row-level; the
	// materializer's next_run_at is silent.
	j := cronJob("* * * * * *")
	j.MaxRetries = 3
	mustCreate(t, db, j)
	if _, err := db.UpdateJob(ctx, j.ID, &chronos.JobUpdate{Name: chronos.Some("n")}); err != nil {
		t.Fatal(err)
	}
	got := l.drain()
	if len(got) != 2 || got[0].Channel != "chronos_jobs" ||
		!jsonEq(got[0].Payload, map[string]any{"op": "created", "job_id": float64(j.ID),
			"next_run_at": j.NextRunAt.UTC().Format(time.RFC3339Nano)}) ||
		!jsonEq(got[1].Payload, map[string]any{"op": "updated", "job_id": float64(j.ID)}) {
		t.Fatalf("job notifications: %v", payloads(got))
	}

	// Materialize: one statement-level notification for the batch, no job one.
	now := time.Now().UTC().Truncate(time.Second).Add(time.Second)
	setNextRunAt(t, db, j.ID, ptr(now))
	l.drain()
	res, err := db.Materialize(ctx, now, 2*time.Second, 10)
	if err != nil || res.Created != 3 {
		t.Fatalf("materialize: %+v %v", res, err)
	}
	got = l.drain()
	if len(got) != 1 || got[0].Channel != "chronos_runs" {
		t.Fatalf("materialize notifications: %v", payloads(got))
	}
	var p runsPayload
	if err := json.Unmarshal([]byte(got[0].Payload), &p); err != nil {
		t.Fatal(err)
	}
	if p.Count != 3 || p.RunID != 0 || p.JobID != j.ID || p.Status != "pending" || p.AvailableAt == nil || !p.AvailableAt.Equal(now) {
		t.Fatalf("materialize payload %s", got[0].Payload)
	}

	// Trigger: a single run names itself. Claim and start: silent.
	r, err := db.Trigger(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	got = l.drain()
	p = runsPayload{}
	if len(got) != 1 || json.Unmarshal([]byte(got[0].Payload), &p) != nil || p.RunID != r.ID || p.Count != 1 {
		t.Fatalf("trigger notifications: %v", payloads(got))
	}
	if _, err := db.Pool.Exec(ctx, "UPDATE job_runs SET available_at = now() - interval '1 second'"); err != nil {
		t.Fatal(err)
	}
	l.drain()
	cs, err := db.Claim(ctx, "w", 10, time.Minute)
	if err != nil || len(cs) != 4 {
		t.Fatalf("claim: %d %v", len(cs), err)
	}
	for _, c := range cs {
		if err := db.Start(ctx, c.Lease()); err != nil {
			t.Fatal(err)
		}
		if err := db.Renew(ctx, c.Lease(), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if got = l.drain(); len(got) != 0 {
		t.Fatalf("claim/start/renew notified: %v", payloads(got))
	}
	// A batch of completions: one notification.
	var outs []sql.Outcome
	for i, c := range cs {
		outs = append(outs, sql.Outcome{Lease: c.Lease(), Success: i%2 == 0, RetryDelay: time.Minute})
	}
	if _, err := db.Complete(ctx, outs); err != nil {
		t.Fatal(err)
	}
	got = l.drain()
	p = runsPayload{}
	if len(got) != 1 || json.Unmarshal([]byte(got[0].Payload), &p) != nil || p.Count != 4 || p.Status != "" ||
		p.AvailableAt == nil || time.Until(*p.AvailableAt) < 30*time.Second {
		t.Fatalf("complete notifications: %v", payloads(got))
	}
	if len(got[0].Payload) > 300 {
		t.Fatalf("payload of %d bytes", len(got[0].Payload))
	}
	if err := db.DeleteJob(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	got = l.drain()
	if len(got) != 1 || !jsonEq(got[0].Payload, map[string]any{"op": "deleted", "job_id": float64(j.ID)}) {
		t.Fatalf("delete notifications: %v", payloads(got))
	}
}

func jsonEq(s string, want map[string]any) bool {
	var got map[string]any
	if json.Unmarshal([]byte(s), &got) != nil || len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

func payloads(ns []*pgconn.Notification) []string {
	var s []string
	for _, n := range ns {
		s = append(s, n.Channel+" "+n.Payload)
	}
	return s
}
