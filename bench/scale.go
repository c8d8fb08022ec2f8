package bench

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	nethttp "net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/bus"
	chttp "github.com/chronoshq/chronos/http"
	"github.com/chronoshq/chronos/reactor"
)

// runScale is the scale scenario: many jobs defined. A materializer tick
// with 1,000 due and a GET /v1/jobs?limit=100 page at the start, middle
// and end, first on 1,000 jobs and then on --scale-jobs, so any slow-down
// shows side by side.
func runScale(ctx context.Context, e *env, f Config) (*result, error) {
	res := &result{Scenario: "scale"}
	res.param("jobs", f.ScaleJobs)

	// The API alone: a reactor's materializer would take the due jobs
	// before the timed tick could.
	api, err := startAPIOnly(e)
	if err != nil {
		return nil, err
	}
	defer api.stop()

	// The jobs are created through the API's batch route, as a user
	// would create ten million: 1,000 a request, a few requests at once.
	small := min(1000, f.ScaleJobs)
	if _, err := e.createScaleJobs(ctx, api.url, 0, small); err != nil {
		return nil, err
	}
	if err := e.measureScale(ctx, api.url, res, "small"); err != nil {
		return nil, err
	}
	took, err := e.createScaleJobs(ctx, api.url, small, f.ScaleJobs)
	if err != nil {
		return nil, err
	}
	res.target("create_jobs_per_s", float64(f.ScaleJobs-small)/took.Seconds(), "jobs/s", "≥ 30000 (10M in < 10 min)")
	res.ms("create_took", took)
	if _, err := e.db.Pool.Exec(ctx, "VACUUM ANALYZE jobs"); err != nil {
		return nil, fmt.Errorf("vacuum analyze jobs: %w", err)
	}
	table, database, err := e.bytesPerJob(ctx)
	if err != nil {
		return nil, err
	}
	res.metric("jobs_bytes_per_job", table, "B")
	res.metric("database_bytes_per_job", database, "B")
	if err := e.measureScale(ctx, api.url, res, "large"); err != nil {
		return nil, err
	}
	res.note("small = %d jobs, large = %d jobs; ticks and pages are medians of several", small, f.ScaleJobs)
	return res, nil
}

// createScaleJobs creates jobs lo..hi-1, yearly cron jobs (never due
// during the bench), through POST /v1/jobs/batch of the API at base, and
// returns how long it took.
func (e *env) createScaleJobs(ctx context.Context, base string, lo, hi int) (time.Duration, error) {
	url := e.target.base + "/scale"
	every := max((hi-lo)/10, batchSize)
	var mark atomic.Int64
	mark.Store(int64(every))
	began := time.Now()
	return e.createBatched(ctx, base, hi-lo, batchClients, func(dst []byte, i int) []byte {
		return fmt.Appendf(dst, `{"name":"bench-scale-%d","cron_expr":"0 0 1 1 *","target_url":%q,"max_retries":0}`, lo+i, url)
	}, func(done int) {
		if m := mark.Load(); int64(done) >= m && mark.CompareAndSwap(m, m+int64(every)) {
			e.b.progress("scale: %d of %d jobs created (%.0f jobs/s)", done, hi-lo, float64(done)/time.Since(began).Seconds())
		}
	})
}

// measureScale times materializer ticks (with 1,000 due and with none) and
// list pages at the start, middle and end of the jobs table.
func (e *env) measureScale(ctx context.Context, apiURL string, res *result, label string) error {
	var lo, hi, count int64
	if err := e.db.Pool.QueryRow(ctx, "SELECT min(id), max(id), count(*) FROM jobs").Scan(&lo, &hi, &count); err != nil {
		return fmt.Errorf("job ids: %w", err)
	}
	const due, rounds = 1000, 3
	var ticks []time.Duration
	for round := range rounds {
		// 1,000 jobs spread over the whole id range become due.
		step := max(1, count/due)
		ids := make([]int64, 0, due)
		for i := int64(0); i < due && lo+i*step+int64(round) <= hi; i++ {
			ids = append(ids, lo+i*step+int64(round))
		}
		if _, err := e.db.Pool.Exec(ctx, "UPDATE job_schedules SET next_run_at = now() - interval '1 second' WHERE job_id = ANY($1)", ids); err != nil {
			return fmt.Errorf("make jobs due: %w", err)
		}
		d, created, err := e.materializeTick(ctx)
		if err != nil {
			return err
		}
		if created != len(ids) {
			res.fail("scale: a tick with %d jobs due created %d runs", len(ids), created)
		}
		ticks = append(ticks, d)
		if _, err := e.db.Pool.Exec(ctx, "DELETE FROM job_runs"); err != nil {
			return fmt.Errorf("delete runs: %w", err)
		}
	}
	res.ms(label+".tick_1000_due", percentiles(ticks).p50)
	var idle []time.Duration
	for range 5 {
		d, _, err := e.materializeTick(ctx)
		if err != nil {
			return err
		}
		idle = append(idle, d)
	}
	res.ms(label+".tick_none_due", percentiles(idle).p50)

	cursor := func(after int64) string {
		if after <= 0 {
			return ""
		}
		return base64.RawURLEncoding.EncodeToString([]byte("c1:" + strconv.FormatInt(after, 10)))
	}
	for _, pos := range []struct {
		name  string
		after int64
	}{{"start", 0}, {"middle", lo + (hi-lo)/2}, {"end", hi - 101}} {
		var ds []time.Duration
		for i := range 21 {
			u := apiURL + "/v1/jobs?limit=100"
			if c := cursor(pos.after); c != "" {
				u += "&cursor=" + c
			}
			t0 := time.Now()
			if err := e.get(ctx, u); err != nil {
				return err
			}
			if i > 0 { // the first one warms caches
				ds = append(ds, time.Since(t0))
			}
		}
		res.ms(label+".page_"+pos.name, percentiles(ds).p50)
	}
	return nil
}

// materializeTick does what the leader's materializer does on a tick:
// batches of 500 until one comes back short.
func (e *env) materializeTick(ctx context.Context) (time.Duration, int, error) {
	const batch = 500 // reactor's materializeBatch
	created := 0
	t0 := time.Now()
	for {
		r, err := e.db.Materialize(ctx, time.Now(), reactor.DefaultLookahead, batch)
		if err != nil {
			return 0, 0, fmt.Errorf("materialize: %w", err)
		}
		created += r.Created
		if r.Jobs < batch {
			return time.Since(t0), created, nil
		}
	}
}

// apiOnly is the HTTP API on the bench's pool, without a reactor.
type apiOnly struct {
	url  string
	srv  *nethttp.Server
	stop func()
}

func startAPIOnly(e *env) (*apiOnly, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	api := chttp.NewServer(chttp.Config{Instance: "bench-scale", AuthDisabled: true, TargetPolicy: chronos.TargetPolicy{AllowPrivate: true}}, e.db, bus.New(), nil, e.b.cfg.Log)
	hs := &nethttp.Server{Handler: api.Handler(), ReadHeaderTimeout: 10 * time.Second}
	var wg sync.WaitGroup
	wg.Go(func() { _ = hs.Serve(ln) })
	a := &apiOnly{url: "http://" + ln.Addr().String(), srv: hs}
	a.stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
		wg.Wait()
	}
	return a, nil
}
