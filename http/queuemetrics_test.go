package http

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/chronoshq/chronos/bus"
	"github.com/chronoshq/chronos/http/apitest"
)

// workProbe is a test probe that also knows the workers.
type workProbe struct {
	apitest.Probe
	inFlight, slots int
}

func (p *workProbe) InFlight() int    { return p.inFlight }
func (p *workProbe) WorkerSlots() int { return p.slots }

func TestQueueMetrics(t *testing.T) {
	e := parallelEnv(t)
	// No leader has counted yet: the gauges are absent, not zero.
	if body := e.scrape(); strings.Contains(body, "chronos_queue_") {
		t.Fatalf("queue gauges before any stats:\n%s", body)
	}
	if body := e.scrape(); strings.Contains(body, "chronos_runs_in_flight") {
		t.Fatalf("in-flight gauge without a WorkProbe:\n%s", body)
	}

	ctx := context.Background()
	job := e.createJob(cronJob("q")).ID
	if _, err := e.db.Pool.Exec(ctx, `
		INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at)
		SELECT $1, now(), 'manual', now() - interval '42 seconds' FROM generate_series(1, 3)`, job); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.RefreshQueueStats(ctx, "leader-x"); err != nil {
		t.Fatal(err)
	}
	e.wantScraped(
		`chronos_queue_runs{status="pending"} 3`,
		`chronos_queue_runs{status="leased"} 0`,
		`chronos_queue_runs{status="running"} 0`,
		`chronos_queue_due_runs 3`,
		`chronos_queue_oldest_pending_seconds 42.`,
		`chronos_queue_stats_age_seconds `,
	)

	// An instance with a reactor exports its workers.
	wp := &workProbe{inFlight: 5, slots: 32}
	other := &env{t: t, srv: NewServer(Config{Instance: "w", AuthDisabled: true}, e.db, bus.New(), wp, slog.New(slog.DiscardHandler))}
	wantMetrics(t, other.scrape(), "chronos_runs_in_flight 5", "chronos_worker_slots 32", `chronos_queue_due_runs 3`)
}

// A database that does not answer costs the queue gauges, not the scrape.
func TestQueueMetricsDatabaseDown(t *testing.T) {
	t.Parallel()
	e := newEnvDB(t, sqlClosed(t))
	body := e.scrape()
	if strings.Contains(body, "chronos_queue_") || !strings.Contains(body, "chronos_leader ") {
		t.Fatalf("metrics with the database down:\n%s", body)
	}
}
