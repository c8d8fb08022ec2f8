package http

import (
	"context"
	nethttp "net/http"
	"strings"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
)

func TestHealthz(t *testing.T) {
	e := parallelEnvNoDB(t)
	w := e.doKey("GET", "/healthz", nil, "")
	wantStatus(t, w, nethttp.StatusOK)
	if decode[map[string]string](t, w)["status"] != "ok" {
		t.Fatalf("body %s", w.Body.String())
	}
}

func TestReadyz(t *testing.T) {
	e := parallelEnv(t)
	e.probe.Leader.Store(true)
	w := e.doKey("GET", "/readyz", nil, "")
	wantStatus(t, w, nethttp.StatusOK)
	r := decode[readiness](t, w)
	if r.Status != "ok" || r.Database != "ok" || r.Listener != "connected" || !r.Leader.Self || r.Auth != "api_keys" || r.Instance != "test-1" {
		t.Fatalf("readiness %+v", r)
	}

	e.probe.Connected.Store(false)
	w = e.doKey("GET", "/readyz", nil, "")
	wantStatus(t, w, nethttp.StatusServiceUnavailable)
	if r := decode[readiness](t, w); r.Listener != "disconnected" || r.Status != "unavailable" {
		t.Fatalf("readiness %+v", r)
	}

	open := newEnvDB(t, e.db, func(c *Config) { c.AuthDisabled = true; c.APIKeys = nil })
	if r := decode[readiness](t, open.doKey("GET", "/readyz", nil, "")); r.Auth != "disabled" {
		t.Fatalf("readiness %+v", r)
	}

	// A database that does not answer makes the instance unready.
	e.probe.Connected.Store(true)
	down := newEnvDB(t, e.db)
	down.db = nil
	closed := sqlClosed(t)
	down.srv.db = closed
	w = down.doKey("GET", "/readyz", nil, "")
	wantStatus(t, w, nethttp.StatusServiceUnavailable)
	if r := decode[readiness](t, w); r.Database != "unreachable" {
		t.Fatalf("readiness %+v", r)
	}
}

func TestMetrics(t *testing.T) {
	e := parallelEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.srv.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	e.probe.Leader.Store(true)
	now := time.Now()
	sched, created := now.Add(-3*time.Millisecond), now.Add(-2*time.Millisecond)
	// Wait until the consumer is subscribed: its events then count.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(e.scrape(), "chronos_listener_reconnects_total 1") {
		if time.Now().After(deadline) {
			t.Fatalf("metrics consumer not running:\n%s", e.scrape())
		}
		e.bus.Publish(chronos.Event{Type: chronos.EventResync})
		time.Sleep(5 * time.Millisecond)
		if strings.Contains(e.scrape(), "chronos_listener_reconnects_total 1") {
			break
		}
	}
	e.bus.Publish(chronos.Event{Type: chronos.EventAttempted, Status: chronos.StatusSucceeded, Attempt: 1, DurationMS: 12,
		Trigger: chronos.TriggerSchedule, ScheduledAt: &sched, StartedAt: &now})
	e.bus.Publish(chronos.Event{Type: chronos.EventAttempted, Status: chronos.StatusDead, Attempt: 1, DurationMS: 3,
		Trigger: chronos.TriggerManual, CreatedAt: &created, StartedAt: &now})
	e.bus.Publish(chronos.Event{Type: chronos.EventClaimed, Count: 7})
	e.bus.Publish(chronos.Event{Type: chronos.EventSkipped, JobID: 42, Count: 3, Op: chronos.SkipOverlap})
	e.bus.Publish(chronos.Event{Type: chronos.EventSkipped, JobID: 42, Count: 24, Op: chronos.SkipExcluded})
	e.bus.Publish(chronos.Event{Type: chronos.EventSkipped, JobID: 43, Count: 5, Op: chronos.SkipMisfire})
	e.bus.Publish(chronos.Event{Type: chronos.EventSkipped, JobID: 44, Count: 1, Op: chronos.SkipDeadline})
	e.bus.Publish(chronos.Event{Type: chronos.EventCaughtUp, JobID: 42, Count: 2})
	for _, op := range []string{chronos.AlertRetrying, chronos.AlertRetrying, chronos.AlertFailed, chronos.AlertDelivered, "bogus"} {
		e.bus.Publish(chronos.Event{Type: chronos.EventDeadAlert, JobID: 42, RunID: 7, Op: op})
	}
	e.bus.Publish(chronos.Event{Type: chronos.EventHostDeferred, Origin: "http://127.0.0.1:9"})
	e.bus.Publish(chronos.Event{Type: chronos.EventHostBreakerOpened, Origin: "http://127.0.0.1:9"})
	want := []string{
		`chronos_host_events_total{event="deferred"} 1`,
		`chronos_host_events_total{event="breaker_opened"} 1`,
		`chronos_host_events_total{event="breaker_closed"} 0`,
		`chronos_dead_alerts_total{outcome="retrying"} 2`,
		`chronos_dead_alerts_total{outcome="failed"} 1`,
		`chronos_dead_alerts_total{outcome="delivered"} 1`,
		`chronos_dead_alerts_total{outcome="expired"} 0`,
		`chronos_occurrences_skipped_total{reason="overlap"} 3`,
		`chronos_occurrences_skipped_total{reason="excluded"} 24`,
		`chronos_occurrences_skipped_total{reason="misfire"} 5`,
		`chronos_occurrences_skipped_total{reason="deadline"} 1`,
		`chronos_occurrences_caught_up_total 1`,
		`chronos_runs_total{status="succeeded"} 1`,
		`chronos_runs_total{status="dead"} 1`,
		`chronos_attempt_duration_seconds_count 2`,
		`chronos_schedule_lag_seconds_count 1`,
		`chronos_trigger_to_start_seconds_count 1`,
		`chronos_claim_batch_size_sum 7`,
		`chronos_leader 1`,
		`chronos_listener_connected 1`,
		`chronos_bus_dropped_events_total`,
		`chronos_bus_published_events_total`,
		`chronos_http_requests_total{code="200",method="GET",route="/metrics"}`,
		`go_goroutines`,
		`process_`,
	}
	for {
		body := e.scrape()
		missing := metricLacking(body, want)
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics lack %q:\n%s", missing, body)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// metricLacking is the first of want that the exposition body lacks, or
// "" when it has them all.
func metricLacking(body string, want []string) string {
	for _, w := range want {
		if !strings.Contains(body, w) {
			return w
		}
	}
	return ""
}

// wantMetrics fails unless the exposition body has every one of want.
func wantMetrics(t testing.TB, body string, want ...string) {
	t.Helper()
	if missing := metricLacking(body, want); missing != "" {
		t.Fatalf("metrics lack %q:\n%s", missing, body)
	}
}

// wantScraped scrapes /metrics until it has every one of want, and fails
// with the last body if 20 s go by first. The gauges read from the
// database at scrape time are left out of a scrape whose read took more
// than a second (an unreachable database must not hang /metrics), and on
// a loaded machine a fresh database's first read can.
func (e *env) wantScraped(want ...string) {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		body := e.scrape()
		if metricLacking(body, want) == "" {
			return
		}
		if time.Now().After(deadline) {
			wantMetrics(e.t, body, want...)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (e *env) scrape() string {
	e.t.Helper()
	w := e.doKey("GET", "/metrics", nil, "")
	wantStatus(e.t, w, nethttp.StatusOK)
	return w.Body.String()
}
