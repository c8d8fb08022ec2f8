package reactor

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/bus"
	"github.com/chronoshq/chronos/internal/pgdsn"
	"github.com/chronoshq/chronos/listeners"
	"github.com/chronoshq/chronos/reactor/reactortest"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// benchDBs is the database of a reactor benchmark: its DSN, the pool the
// runs are created on (synchronous, like the API's) and the reactor's
// pool, which is the same one unless asyncCommit sets the reactor's apart
// with synchronous_commit=off. Both close at cleanup.
func benchDBs(b *testing.B, asyncCommit bool) (dsn string, db, rdb *sql.DB) {
	dsn = sqltest.NewURL(b)
	open := func(dsn, name string) *sql.DB {
		d, err := sql.Open(context.Background(), dsn, name)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(d.Close)
		return d
	}
	db = open(dsn, "bench")
	rdb = db
	if asyncCommit {
		rdb = open(pgdsn.WithParam(dsn, "synchronous_commit", "off"), "bench-reactor")
	}
	return dsn, db, rdb
}

// benchCommitModes runs bench twice, as sub-benchmarks: "sync", the reactor
// on the runs' synchronous pool, and "async-commit", the reactor on a pool
// of its own with synchronous_commit=off (see benchDBs).
func benchCommitModes(b *testing.B, bench func(b *testing.B, asyncCommit bool)) {
	b.Run("sync", func(b *testing.B) { bench(b, false) })
	b.Run("async-commit", func(b *testing.B) { bench(b, true) })
}

// benchEnv is what a reactor benchmark runs on: the databases of benchDBs,
// a local target that answers with handler, an enabled job on it whose
// only scheduled run is a day away (so every run the benchmark sees is one
// it made) and the tests' logger (which a benchmark discards).
type benchEnv struct {
	dsn     string
	db, rdb *sql.DB
	job     *chronos.Job
	log     *slog.Logger
}

func newBenchEnv(b *testing.B, asyncCommit bool, name string, handler http.HandlerFunc) *benchEnv {
	dsn, db, rdb := benchDBs(b, asyncCommit)
	srv := httptest.NewServer(handler)
	b.Cleanup(srv.Close)
	job := &chronos.Job{Name: name, TargetURL: srv.URL, Enabled: true}
	at := time.Now().Add(24 * time.Hour)
	job.RunAt = &at
	job.ApplyDefaults()
	if err := db.CreateJob(context.Background(), job); err != nil {
		b.Fatal(err)
	}
	return &benchEnv{dsn: dsn, db: db, rdb: rdb, job: job, log: reactortest.Logger(b)}
}

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
	benchCommitModes(b, benchTriggerToTarget)
}

func benchTriggerToTarget(b *testing.B, asyncCommit bool) {
	got := make(chan time.Time, 1)
	e := newBenchEnv(b, asyncCommit, "bench", func(w http.ResponseWriter, r *http.Request) { got <- time.Now() })
	db, job := e.db, e.job
	ctx := context.Background()
	bs := bus.New()
	rctx, cancel := context.WithCancel(ctx)
	l := listeners.New(listeners.Config{DSN: e.dsn, Instance: "bench"}, bs, e.log)
	r := New(Config{DSN: e.dsn, Instance: "bench", IdlePollInterval: time.Minute, AllowPrivateTargets: true}, e.rdb, bs, e.log)
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

// BenchmarkBurnDown measures how fast one instance drains a backlog of due
// runs against a local 2xx target (b.N runs; reports runs/s):
//
//	go test -run '^$' -bench BurnDown -benchtime 20000x ./reactor/
//
// As in BenchmarkTriggerToTarget, "async-commit" gives the reactor a pool
// with synchronous_commit=off.
func BenchmarkBurnDown(b *testing.B) {
	benchCommitModes(b, benchBurnDown)
}

func benchBurnDown(b *testing.B, asyncCommit bool) {
	e := newBenchEnv(b, asyncCommit, "burn", func(w http.ResponseWriter, r *http.Request) {})
	ctx := context.Background()
	job := e.job
	if _, err := e.db.Pool.Exec(ctx, `INSERT INTO job_runs (job_id, scheduled_at, trigger)
		SELECT $1, now(), 'manual' FROM generate_series(1, $2)`, job.ID, b.N); err != nil {
		b.Fatal(err)
	}

	bs := bus.New()
	attempted := bs.Subscribe(1<<16, func(e chronos.Event) bool { return e.Type == chronos.EventAttempted })
	defer attempted.Close()
	r := New(Config{DSN: e.dsn, Instance: "bench", WorkerConcurrency: 64, IdlePollInterval: time.Minute, AllowPrivateTargets: true}, e.rdb, bs, e.log)
	rctx, cancel := context.WithCancel(ctx)
	rdone := make(chan error, 1)
	b.ResetTimer()
	start := time.Now()
	cpu0 := processCPU(b)
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
	cpu := processCPU(b) - cpu0
	b.StopTimer()
	cancel()
	if err := <-rdone; err != nil {
		b.Error(err)
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "runs/s")
	// CPU per run is the steadier figure on a shared machine: wall time
	// moves with whatever else runs, CPU time much less. It is the whole
	// test process's (reactor, pgx and the httptest target), not
	// Postgres's.
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/run")
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkExecutorRequest measures building one delivery's request
// (headers, signature) for a job signed with the cluster's secret, with
// no network: the allocations a delivery costs before it is sent.
//
//	go test -run '^$' -bench ExecutorRequest -benchmem ./reactor/
func BenchmarkExecutorRequest(b *testing.B) {
	e := newExecutor(Config{SigningSecret: "s3cret"}.withDefaults())
	defer e.close()
	job := testJob("http://127.0.0.1:9/hook")
	job.Headers = map[string]string{"X-Env": "prod"}
	run := testRun()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.request(ctx, job, run); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExecutorDo measures one delivery's HTTP call, from the
// request's building to the response read, against a local target that
// answers 204, one at a time: the executor's own cost per run and the
// client's, and the target's (in this process too).
//
//	go test -run '^$' -bench ExecutorDo -benchmem ./reactor/
func BenchmarkExecutorDo(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	e := newExecutor(Config{AllowPrivateTargets: true}.withDefaults())
	defer e.close()
	job := testJob(srv.URL + "/hook")
	run := testRun()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if res := e.do(ctx, job, run); !res.Success() {
			b.Fatalf("result = %+v, want success", res)
		}
	}
}
