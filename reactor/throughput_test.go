package reactor

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/bus"
)

// BenchmarkBurnDown measures how fast one instance drains a backlog of due
// runs against a local 2xx target (b.N runs; reports runs/s):
//
//	go test -run '^$' -bench BurnDown -benchtime 20000x ./reactor/
//
// As in BenchmarkTriggerToTarget, "async-commit" gives the reactor a pool
// with synchronous_commit=off.
func BenchmarkBurnDown(b *testing.B) {
	b.Run("sync", func(b *testing.B) { benchBurnDown(b, "") })
	b.Run("async-commit", func(b *testing.B) { benchBurnDown(b, "synchronous_commit=off") })
}

func benchBurnDown(b *testing.B, reactorParams string) {
	dsn, db, rdb := benchDBs(b, reactorParams)
	ctx := context.Background()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	job := &chronos.Job{Name: "burn", TargetURL: srv.URL, Enabled: true}
	at := time.Now().Add(24 * time.Hour)
	job.RunAt = &at
	job.ApplyDefaults()
	if err := db.CreateJob(ctx, job); err != nil {
		b.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO job_runs (job_id, scheduled_at, trigger)
		SELECT $1, now(), 'manual' FROM generate_series(1, $2)`, job.ID, b.N); err != nil {
		b.Fatal(err)
	}

	bs := bus.New()
	attempted := bs.Subscribe(1<<16, func(e chronos.Event) bool { return e.Type == chronos.EventAttempted })
	defer attempted.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	r := New(Config{DSN: dsn, Instance: "bench", WorkerConcurrency: 64, IdlePollInterval: time.Minute, AllowPrivateTargets: true}, rdb, bs, log)
	rctx, cancel := context.WithCancel(ctx)
	rdone := make(chan error, 1)
	b.ResetTimer()
	start := time.Now()
	go func() { rdone <- r.Run(rctx) }()
	for n := 0; n < b.N; {
		select {
		case <-attempted.C():
			n++
		case <-time.After(30 * time.Second):
			b.Fatalf("stalled after %d of %d runs", n, b.N)
		}
	}
	el := time.Since(start)
	b.StopTimer()
	cancel()
	if err := <-rdone; err != nil {
		b.Error(err)
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "runs/s")
}
