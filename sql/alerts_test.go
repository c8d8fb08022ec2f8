package sql_test

import (
	"context"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// alertRows is what the dead_alerts outbox holds: (run id, url or "") per row.
func alertRows(t *testing.T, db *sql.DB) [][2]any {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), `SELECT run_id, coalesce(url, '') FROM dead_alerts ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][2]any
	for rows.Next() {
		var run int64
		var url string
		if err := rows.Scan(&run, &url); err != nil {
			t.Fatal(err)
		}
		out = append(out, [2]any{run, url})
	}
	return out
}

// TestDeadAlertOnEveryPath: each way a run goes dead writes its alerts in
// the same transaction (the worker's completion, the reaper's reclaim, a
// hand-written UPDATE), one per destination: the job's on_dead_url, and
// the cluster's while an instance with DEAD_LETTER_WEBHOOK has been seen.
// Nothing else writes one: a failure with attempts left, a success, an
// update of a dead run, a missed run.
func TestDeadAlertOnEveryPath(t *testing.T) {
	db, ctx, j := parallelJob(t, "0 0 1 1 *", func(j *chronos.Job) {
		j.MaxRetries = 1
		j.OnDeadURL = ptr("http://127.0.0.1:9/dead")
	})
	plain := cronJob("0 0 1 1 *")
	plain.MaxRetries = 0
	mustCreate(t, db, plain)

	// Completion: the first failure retries (no alert), the second kills.
	insertPending(t, db, j.ID, 1)
	c := claimOne(t, db, "w", time.Minute)
	if _, err := db.Complete(ctx, []sql.Outcome{{Lease: c.Lease(), StatusCode: 500, Error: "HTTP 500", RetryDelay: 0}}); err != nil {
		t.Fatal(err)
	}
	if got := alertRows(t, db); len(got) != 0 {
		t.Fatalf("a retry alerted: %v", got)
	}
	c = claimOne(t, db, "w", time.Minute)
	if _, err := db.Complete(ctx, []sql.Outcome{{Lease: c.Lease(), StatusCode: 502, Error: "HTTP 502 Bad Gateway"}}); err != nil {
		t.Fatal(err)
	}
	// No sender of cluster alerts seen: the job's alert alone.
	if got := alertRows(t, db); len(got) != 1 || got[0] != [2]any{c.Run.ID, "http://127.0.0.1:9/dead"} {
		t.Fatalf("after the completion killed run %d: %v", c.Run.ID, got)
	}
	deadByCompletion := c.Run.ID

	// From now on an instance sends cluster alerts.
	if err := db.AlertSenderSeen(ctx, "sender-1"); err != nil {
		t.Fatal(err)
	}
	// The reaper: an expired lease of a run without attempts left.
	insertPending(t, db, plain.ID, 1)
	c = claimOne(t, db, "vanished", time.Millisecond)
	reactortestEventually(t, "the lease to expire", func() bool {
		res, err := db.Reclaim(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		return res.Dead == 1
	})
	if got := alertRows(t, db); len(got) != 2 || got[1] != [2]any{c.Run.ID, ""} {
		t.Fatalf("after the reaper killed run %d: %v", c.Run.ID, got)
	}

	// A hand-written UPDATE is a death like any other; updating a dead
	// run again (even to dead) is not.
	insertPending(t, db, j.ID, 1)
	var id int64
	if err := db.Pool.QueryRow(ctx, `UPDATE job_runs SET status = 'dead', finished_at = now(), last_error = 'by hand'
		WHERE job_id = $1 AND status = 'pending' RETURNING id`, j.ID).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE job_runs SET status = 'dead', last_error = 'again' WHERE status = 'dead'`); err != nil {
		t.Fatal(err)
	}
	got := alertRows(t, db)
	if len(got) != 4 || got[2][0] != id || got[3][0] != id {
		t.Fatalf("after the hand-written death of run %d: %v", id, got)
	}

	// A success writes nothing.
	insertPending(t, db, plain.ID, 1)
	c = claimOne(t, db, "w", time.Minute)
	if _, err := db.Complete(ctx, []sql.Outcome{{Lease: c.Lease(), Success: true, StatusCode: 200}}); err != nil {
		t.Fatal(err)
	}
	if got := alertRows(t, db); len(got) != 4 {
		t.Fatalf("a success alerted: %v", got)
	}

	// The alert carries the job and the run as they were when it died.
	claim, err := db.ClaimAlerts(ctx, "a", 10, time.Minute, false)
	if err != nil || len(claim.Alerts) != 2 {
		t.Fatalf("claim job alerts: %+v, %v", claim, err)
	}
	a := claim.Alerts[0] // in id order: the first death's
	if a.URL != "http://127.0.0.1:9/dead" || a.Attempts != 1 || a.Alert.Job.ID != j.ID || a.Alert.Job.Name != j.Name ||
		a.Alert.Run.ID != deadByCompletion || a.Alert.Run.Status != chronos.StatusDead || a.Alert.Run.AttemptCount != 2 ||
		a.Alert.Run.Trigger != chronos.TriggerManual || a.Alert.Run.LastStatusCode == nil || *a.Alert.Run.LastStatusCode != 502 ||
		a.Alert.Run.LastError == nil || *a.Alert.Run.LastError != "HTTP 502 Bad Gateway" || a.Alert.Run.FinishedAt == nil {
		t.Fatalf("alert %+v", a.Alert)
	}
}

// reactortestEventually polls cond every 5ms for up to 10s.
func reactortestEventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestAlertClaimsAndFences: claims split the outbox between instances
// (the cluster's alerts only for those with a webhook), lease the rows
// they take, report when the next one is due, and every write after the
// send is fenced on the claim.
func TestAlertClaimsAndFences(t *testing.T) {
	db, ctx := parallelDB(t)
	if err := db.AlertSenderSeen(ctx, "sender"); err != nil {
		t.Fatal(err)
	}
	j := cronJob("0 0 1 1 *")
	j.MaxRetries = 0
	j.OnDeadURL = ptr("http://127.0.0.1:9/dead")
	mustCreate(t, db, j)
	insertPending(t, db, j.ID, 3)
	if _, err := db.Pool.Exec(ctx, `UPDATE job_runs SET status = 'dead', finished_at = now() WHERE job_id = $1`, j.ID); err != nil {
		t.Fatal(err)
	}
	// 3 job alerts, 3 cluster alerts. Without a webhook: the job's only.
	a, err := db.ClaimAlerts(ctx, "a", 2, time.Minute, false)
	if err != nil || len(a.Alerts) != 2 || a.Alerts[0].URL == "" || a.Alerts[1].URL == "" {
		t.Fatalf("claim a: %+v, %v", a, err)
	}
	b, err := db.ClaimAlerts(ctx, "b", 10, time.Minute, true)
	if err != nil || len(b.Alerts) != 4 {
		t.Fatalf("claim b: %d alerts, %v", len(b.Alerts), err)
	}
	// Everything is leased: nothing more, and the next due is a lease's end.
	c, err := db.ClaimAlerts(ctx, "c", 10, time.Minute, true)
	if err != nil || len(c.Alerts) != 0 || c.Next == nil || time.Until(*c.Next) < 30*time.Second {
		t.Fatalf("claim c: %+v, %v", c, err)
	}

	// A retry moves it; another instance cannot write over a's claim.
	first := a.Alerts[0]
	stolen := *first
	stolen.Worker = "c"
	if at, err := db.AlertFailed(ctx, &stolen, 500, "HTTP 500", 0); err != nil || at != nil {
		t.Fatalf("a write on another's claim: %v, %v", at, err)
	}
	if at, err := db.AlertFailed(ctx, first, 500, "HTTP 500", 0); err != nil || at == nil {
		t.Fatalf("AlertFailed: %v, %v", at, err)
	}
	again, err := db.ClaimAlerts(ctx, "c", 10, time.Minute, true)
	if err != nil || len(again.Alerts) != 1 || again.Alerts[0].ID != first.ID || again.Alerts[0].Attempts != 2 {
		t.Fatalf("claim after the failure: %+v, %v", again, err)
	}
	// The old claim is fenced out now.
	if ok, err := db.AlertSent(ctx, first); err != nil || ok {
		t.Fatalf("a stale claim deleted the alert: %v, %v", ok, err)
	}
	if ok, err := db.AlertSent(ctx, again.Alerts[0]); err != nil || !ok {
		t.Fatalf("AlertSent: %v, %v", ok, err)
	}
	// A release hands it back uncounted.
	second := a.Alerts[1]
	if err := db.ReleaseAlert(ctx, second); err != nil {
		t.Fatal(err)
	}
	rel, err := db.ClaimAlerts(ctx, "d", 10, time.Minute, false)
	if err != nil || len(rel.Alerts) != 1 || rel.Alerts[0].ID != second.ID || rel.Alerts[0].Attempts != 1 {
		t.Fatalf("claim after the release: %+v, %v", rel, err)
	}

	// Expiry drops old rows that nobody holds, and no others.
	if _, err := db.Pool.Exec(ctx, `UPDATE dead_alerts SET created_at = now() - interval '3 days'`); err != nil {
		t.Fatal(err)
	}
	gone, err := db.ExpireAlerts(ctx, 48*time.Hour, 100)
	if err != nil || len(gone) != 0 {
		t.Fatalf("expired leased alerts: %+v, %v", gone, err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE dead_alerts SET available_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	gone, err = db.ExpireAlerts(ctx, 48*time.Hour, 100)
	if err != nil || len(gone) != 5 {
		t.Fatalf("expired %+v, %v; want the 5 left", gone, err)
	}
}
