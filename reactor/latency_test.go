package reactor

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/bus"
	"github.com/chronoshq/chronos/listeners"
)

// BenchmarkTriggerToTarget measures the time from a run's creation
// (db.Trigger, then the local bus publish, as the API's trigger endpoint
// does) to the target receiving the request, one run at a time, on an
// otherwise idle instance with its listener running (so each run's NOTIFY
// arrives too, as in production). It reports p50/p99 in milliseconds:
//
//	go test -run '^$' -bench TriggerToTarget -benchtime 1000x ./reactor/
//
// "commit" is measured from Trigger's return, "call" from before it (so it
// includes the insert's own round trip).
//
// Sub-benchmark "sync" gives the reactor a pool like the API's. On this
// machine every commit waits about 0.8 ms for the WAL flush, and the claim
// is a commit on the path. "async-commit" gives the reactor its own pool
// with synchronous_commit=off (the runs are still created on a synchronous
// pool): a claim or completion lost in a server crash only means the run is
// delivered again, which at-least-once delivery allows anyway.
func BenchmarkTriggerToTarget(b *testing.B) {
	b.Run("sync", func(b *testing.B) { benchTriggerToTarget(b, "") })
	b.Run("async-commit", func(b *testing.B) { benchTriggerToTarget(b, "synchronous_commit=off") })
}

func benchTriggerToTarget(b *testing.B, reactorParams string) {
	dsn, db, rdb := benchDBs(b, reactorParams)
	ctx := context.Background()
	got := make(chan time.Time, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- time.Now() }))
	defer srv.Close()

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	bs := bus.New()
	rctx, cancel := context.WithCancel(ctx)
	l := listeners.New(listeners.Config{DSN: dsn, Instance: "bench"}, bs, log)
	r := New(Config{DSN: dsn, Instance: "bench", IdlePollInterval: time.Minute, AllowPrivateTargets: true}, rdb, bs, log)
	ldone, rdone := make(chan error, 1), make(chan error, 1)
	go func() { ldone <- l.Run(rctx) }()
	go func() { rdone <- r.Run(rctx) }()
	defer func() {
		cancel()
		if err := <-rdone; err != nil {
			b.Error(err)
		}
		if err := <-ldone; err != nil {
			b.Error(err)
		}
	}()
	for !l.Connected() {
		time.Sleep(5 * time.Millisecond)
	}
	job := &chronos.Job{Name: "bench", TargetURL: srv.URL, Enabled: true}
	at := time.Now().Add(24 * time.Hour)
	job.RunAt = &at
	job.ApplyDefaults()
	if err := db.CreateJob(ctx, job); err != nil {
		b.Fatal(err)
	}

	one := func() (fromCommit, fromCall time.Duration) {
		t0 := time.Now()
		run, err := db.Trigger(ctx, job.ID)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		avail := run.AvailableAt
		bs.Publish(chronos.Event{Type: chronos.EventRunChanged, RunID: run.ID, JobID: job.ID, Status: chronos.StatusPending, AvailableAt: &avail})
		select {
		case recv := <-got:
			return recv.Sub(t1), recv.Sub(t0)
		case <-time.After(20 * time.Second):
			b.Fatal("target not called within 20s")
		}
		return 0, 0
	}
	for range 20 { // warm-up: connections, prepared statements
		one()
	}
	commit := make([]time.Duration, 0, b.N)
	call := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		c1, c2 := one()
		commit, call = append(commit, c1), append(call, c2)
	}
	b.StopTimer()
	report(b, "commit", commit)
	report(b, "call", call)
}

func report(b *testing.B, name string, d []time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	p := func(q float64) time.Duration { return d[min(len(d)-1, int(q*float64(len(d))))] }
	ms := func(x time.Duration) float64 { return float64(x) / float64(time.Millisecond) }
	b.ReportMetric(ms(p(0.50)), name+"-p50-ms")
	b.ReportMetric(ms(p(0.99)), name+"-p99-ms")
	b.Logf("%s -> target, %d runs: p50 %s p90 %s p99 %s max %s", name, len(d), p(0.5), p(0.9), p(0.99), d[len(d)-1])
}
