package reactor

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/reactor/reactortest"
	"github.com/chronoshq/chronos/sql"
)

// alertInbox is an alert destination on 127.0.0.1 that keeps every
// request it gets and answers with status() (200 when nil).
type alertInbox struct {
	*reactortest.Target
	mu  sync.Mutex
	got []delivery
}

func newAlertInbox(t *testing.T, answer func(r *http.Request) int) *alertInbox {
	in := &alertInbox{}
	in.Target = reactortest.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		in.mu.Lock()
		in.got = append(in.got, delivery{r.Header.Clone(), b})
		in.mu.Unlock()
		code := http.StatusOK
		if answer != nil {
			code = answer(r)
		}
		w.WriteHeader(code)
	})
	return in
}

func (in *alertInbox) requests() []delivery {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]delivery(nil), in.got...)
}

// fastAlerts retries alerts within milliseconds, Attempts times.
func fastAlerts(webhook string, attempts int) AlertConfig {
	return AlertConfig{Webhook: webhook, Attempts: attempts, BackoffBase: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond,
		PollInterval: 100 * time.Millisecond, Timeout: 5 * time.Second}
}

// waitSender waits until the instance has said it sends cluster alerts:
// runs that die from then on get one.
func waitSender(t *testing.T, db *sql.DB, instance string) {
	t.Helper()
	eventually(t, 10*time.Second, "the instance registered as a cluster alert sender", func() bool {
		var n int
		err := db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM dead_alert_senders WHERE instance = $1`, instance).Scan(&n)
		return err == nil && n == 1
	})
}

func outboxSize(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM dead_alerts`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// dyingJob is a job whose target answers 500 and that has no retries: its
// every run dies at its first attempt.
func dyingJob(t *testing.T, db *sql.DB, onDead string, secret string) *chronos.Job {
	t.Helper()
	target := newTarget(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	j := &chronos.Job{TargetURL: target.URL + "/job", MaxRetries: 0, Labels: map[string]string{"team": "payments"}}
	if onDead != "" {
		j.OnDeadURL = &onDead
	}
	if secret != "" {
		j.SigningSecrets = []chronos.SigningSecret{{Secret: secret, CreatedAt: time.Now().UTC()}}
	}
	return createJob(t, db, j)
}

// checkAlert verifies an alert request with the reference Standard
// Webhooks library and secret, and returns its body.
func checkAlert(t *testing.T, d delivery, key []byte) chronos.DeadRunAlert {
	t.Helper()
	wh, err := standardwebhooks.NewWebhookRaw(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(d.body, d.header); err != nil {
		t.Fatalf("the reference library refuses the alert: %v\n%v", err, d.header)
	}
	if !strings.HasPrefix(d.header.Get(HeaderWebhookID), "alert_") || d.header.Get(HeaderAlert) != chronos.AlertTypeRunDead ||
		d.header.Get("Content-Type") != "application/json" {
		t.Fatalf("alert headers: %v", d.header)
	}
	var a chronos.DeadRunAlert
	if err := json.Unmarshal(d.body, &a); err != nil {
		t.Fatalf("alert body %s: %v", d.body, err)
	}
	// The raw body has every field a receiver reads, by these names.
	var raw map[string]map[string]any
	_ = json.Unmarshal(d.body, &raw)
	for _, f := range []string{"id", "scheduled_at", "trigger", "attempt_count", "status", "last_error", "last_status_code"} {
		if _, ok := raw["run"][f]; !ok {
			t.Errorf("alert run lacks %q: %s", f, d.body)
		}
	}
	for _, f := range []string{"id", "name", "labels"} {
		if _, ok := raw["job"][f]; !ok {
			t.Errorf("alert job lacks %q: %s", f, d.body)
		}
	}
	return a
}

// TestDeadRunAlerts: a run that dies (max_retries 0, target 500) produces
// exactly one alert at the job's on_dead_url and one at DEAD_LETTER_WEBHOOK,
// each signed (the job's own secret; the cluster's), with the job, the
// run, its last error and status code, and a one-line text. A redrive that
// dies again is a second death, and a second alert at each.
func TestDeadRunAlerts(t *testing.T) {
	dsn := parallelDSN(t)
	jobInbox, clusterInbox := newAlertInbox(t, nil), newAlertInbox(t, nil)
	const clusterSecret = "cluster-secret"
	in := startReactor(t, dsn, Config{SigningSecret: clusterSecret, Alerts: fastAlerts(clusterInbox.URL+"/cluster", 3)})
	waitSender(t, in.db, in.Name)
	jobSecret := chronos.NewSigningSecret()
	j := dyingJob(t, in.db, jobInbox.URL+"/job-alerts", jobSecret)

	run := in.trigger(t, j.ID)
	reactortest.WaitStatus(t, in.db, run.ID, chronos.StatusDead, 20*time.Second)
	eventually(t, 20*time.Second, "an alert at each destination", func() bool {
		return jobInbox.Hits.Load() >= 1 && clusterInbox.Hits.Load() >= 1
	})

	// A redrive that dies too: one more alert at each.
	redrive, err := in.db.Redrive(t.Context(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	in.bus.Publish(chronos.Event{Type: chronos.EventRunChanged, RunID: redrive.ID, Status: chronos.StatusPending, AvailableAt: &redrive.AvailableAt})
	reactortest.WaitStatus(t, in.db, redrive.ID, chronos.StatusDead, 20*time.Second)
	eventually(t, 20*time.Second, "a second alert at each destination", func() bool {
		return jobInbox.Hits.Load() >= 2 && clusterInbox.Hits.Load() >= 2
	})
	eventually(t, 10*time.Second, "the outbox emptied", func() bool { return outboxSize(t, in.db) == 0 })
	if err := in.stop(); err != nil {
		t.Fatal(err)
	}
	if n, m := jobInbox.Hits.Load(), clusterInbox.Hits.Load(); n != 2 || m != 2 {
		t.Fatalf("alerts: %d at on_dead_url, %d at DEAD_LETTER_WEBHOOK; want 2 each (one per death)", n, m)
	}

	for i, want := range []*chronos.Run{run, redrive} {
		for _, c := range []struct {
			name string
			d    delivery
			key  []byte
		}{
			{"on_dead_url", jobInbox.requests()[i], chronos.SigningKey(jobSecret)},
			{"DEAD_LETTER_WEBHOOK", clusterInbox.requests()[i], []byte(clusterSecret)},
		} {
			a := checkAlert(t, c.d, c.key)
			r := a.Run
			if a.Type != chronos.AlertTypeRunDead || a.Job.ID != j.ID || a.Job.Name != j.Name || a.Job.Labels["team"] != "payments" ||
				r.ID != want.ID || r.Status != chronos.StatusDead || r.AttemptCount != 1 || r.Trigger != want.Trigger ||
				!r.ScheduledAt.Equal(want.ScheduledAt) || r.LastStatusCode == nil || *r.LastStatusCode != 500 ||
				r.LastError == nil || !strings.Contains(*r.LastError, "HTTP 500") {
				t.Errorf("%s alert %d: %+v", c.name, i+1, a)
			}
			if i == 1 && (r.RedriveOf == nil || *r.RedriveOf != run.ID) {
				t.Errorf("%s alert of the redrive: redrive_of %v", c.name, r.RedriveOf)
			}
			wantText := "is dead after 1 attempt (" + string(want.Trigger) + " run of"
			if !strings.Contains(a.Text, j.Name) || !strings.Contains(a.Text, wantText) || !strings.Contains(a.Text, "HTTP 500") ||
				strings.Contains(a.Text, "\n") {
				t.Errorf("%s alert %d text %q", c.name, i+1, a.Text)
			}
		}
	}
	// The job's destination was not signed with the cluster's secret.
	whCluster, _ := standardwebhooks.NewWebhookRaw([]byte(clusterSecret))
	if d := jobInbox.requests()[0]; whCluster.Verify(d.body, d.header) == nil {
		t.Error("the job's alert verifies with the cluster secret; want the job's own")
	}
}

// TestDeadAlertGivenUp: an alert whose destination answers 500 is sent
// Attempts times, then given up: logged and counted (alert.dead_run,
// failed), deleted, and never the cause of another alert or run.
func TestDeadAlertGivenUp(t *testing.T) {
	dsn := parallelDSN(t)
	failing := newAlertInbox(t, func(*http.Request) int { return http.StatusInternalServerError })
	in := startReactor(t, dsn, Config{Alerts: fastAlerts(failing.URL+"/cluster", 3)})
	waitSender(t, in.db, in.Name)
	events := in.bus.Subscribe(64, func(e chronos.Event) bool { return e.Type == chronos.EventDeadAlert })
	defer events.Close()
	j := dyingJob(t, in.db, failing.URL+"/job", "")

	run := in.trigger(t, j.ID)
	reactortest.WaitStatus(t, in.db, run.ID, chronos.StatusDead, 20*time.Second)
	outcomes := map[string]int{}
	deadline := time.After(30 * time.Second)
	for outcomes[chronos.AlertFailed] < 2 {
		select {
		case e := <-events.C():
			if e.RunID != run.ID || e.JobID != j.ID {
				t.Fatalf("event of another run: %+v", e)
			}
			outcomes[e.Op]++
		case <-deadline:
			t.Fatalf("alerts not given up: outcomes %v, %d requests", outcomes, failing.Hits.Load())
		}
	}
	if err := in.stop(); err != nil {
		t.Fatal(err)
	}
	// 3 attempts at each of the two destinations, then nothing.
	if n := failing.Hits.Load(); n != 6 || outcomes[chronos.AlertRetrying] != 4 || outcomes[chronos.AlertDelivered] != 0 {
		t.Fatalf("%d requests, outcomes %v; want 6: 3 attempts at each destination", n, outcomes)
	}
	if n := outboxSize(t, in.db); n != 0 {
		t.Fatalf("%d alerts left in the outbox", n)
	}
	var runs int
	if err := in.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM job_runs`).Scan(&runs); err != nil || runs != 1 {
		t.Fatalf("%d runs, want the one that died (%v)", runs, err)
	}
	for _, d := range failing.requests() {
		if d.header.Get(HeaderWebhookSignature) != "" {
			t.Fatalf("signed without a secret: %v", d.header)
		}
	}
}

// TestDeadAlertSurvivesRestart: an alert claimed by an instance that stops
// before its destination answered is handed back, and the next instance
// sends it: same alert (webhook-id), nothing lost.
func TestDeadAlertSurvivesRestart(t *testing.T) {
	dsn := parallelDSN(t)
	var hang atomic.Bool
	hang.Store(true)
	inbox := newAlertInbox(t, func(r *http.Request) int {
		if hang.Load() {
			<-r.Context().Done() // until the sender gives up on it
		}
		return http.StatusNoContent
	})
	first := startReactor(t, dsn, Config{Alerts: fastAlerts("", 3)})
	j := dyingJob(t, first.db, inbox.URL+"/job", "")
	run := first.trigger(t, j.ID)
	reactortest.WaitStatus(t, first.db, run.ID, chronos.StatusDead, 20*time.Second)
	eventually(t, 20*time.Second, "the alert in flight", func() bool { return inbox.Hits.Load() == 1 })
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}
	// Handed back: due, unleased, its attempt uncounted.
	var attempts int
	var leased *string
	if err := first.db.Pool.QueryRow(context.Background(), `SELECT attempts, leased_by FROM dead_alerts`).Scan(&attempts, &leased); err != nil {
		t.Fatalf("the alert is gone from the outbox: %v", err)
	}
	if attempts != 0 || leased != nil {
		t.Fatalf("after the stop: attempts %d, leased_by %v", attempts, leased)
	}

	hang.Store(false)
	second := startReactor(t, dsn, Config{Alerts: fastAlerts("", 3)})
	eventually(t, 20*time.Second, "the alert sent by the next instance", func() bool { return outboxSize(t, second.db) == 0 })
	if err := second.stop(); err != nil {
		t.Fatal(err)
	}
	got := inbox.requests()
	if len(got) != 2 || got[0].header.Get(HeaderWebhookID) != got[1].header.Get(HeaderWebhookID) {
		t.Fatalf("requests %d; webhook-ids %v", len(got), got)
	}
	var a chronos.DeadRunAlert
	if err := json.Unmarshal(got[1].body, &a); err != nil || a.Run.ID != run.ID {
		t.Fatalf("alert %s: %v", got[1].body, err)
	}
}

// TestAlerterStops: the alerter's loop returns when its context ends, at
// once, even with an alert in flight to a destination that never answers
// (the alert is handed back).
func TestAlerterStops(t *testing.T) {
	dsn := parallelDSN(t)
	inbox := newAlertInbox(t, func(r *http.Request) int { <-r.Context().Done(); return 200 })
	base := reactortest.NewInstance(t, dsn, "")
	r := New(Config{DSN: dsn, Instance: base.Name, AllowPrivateTargets: true, Alerts: fastAlerts("", 3)}, base.DB, base.Bus, base.Log)
	j := dyingJob(t, base.DB, inbox.URL+"/job", "")
	insertDeadRun(t, base.DB, j.ID)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		newAlerter(r).run(ctx)
	}()
	eventually(t, 20*time.Second, "the alert in flight", func() bool { return inbox.Hits.Load() == 1 })
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the alerter did not stop")
	}
	var attempts int
	if err := base.DB.Pool.QueryRow(context.Background(), `SELECT attempts FROM dead_alerts`).Scan(&attempts); err != nil || attempts != 0 {
		t.Fatalf("the alert in flight was not handed back: attempts %d, %v", attempts, err)
	}
	r.exec.close()
}

// insertDeadRun makes a run of the job dead by hand (the trigger writes
// its alerts).
func insertDeadRun(t *testing.T, db *sql.DB, jobID int64) {
	t.Helper()
	var id int64
	ctx := context.Background()
	if err := db.Pool.QueryRow(ctx, `INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at)
		VALUES ($1, now(), 'manual', now() + interval '1 year') RETURNING id`, jobID).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE job_runs SET status = 'dead', attempt_count = 1, finished_at = now(),
		last_error = 'HTTP 500', last_status_code = 500 WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
}
