package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	nethttp "net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/bus"
	chttp "github.com/chronoshq/chronos/http"
	"github.com/chronoshq/chronos/reactor"
)

// idleSettle is how long an idle instance runs before the measurement
// starts: startup (first claims, first ticks, pool warm-up) is not idle.
const idleSettle = 3 * time.Second

// benchIdle: one instance with nothing to do. How many statements it makes
// Postgres run per second (pg_stat_statements when the server preloads it,
// else the transactions pg_stat_database counts for the database), what
// they are (a counting proxy between the instance and Postgres), and its
// RSS. The instance is a child process when a chronos binary is at hand:
// an in-process RSS would be the bench's own.
func benchIdle(ctx context.Context, b *bencher) (*benchResult, error) {
	f := b.flags
	e, err := b.newEnv(ctx)
	if err != nil {
		return nil, err
	}
	defer e.close()
	res := &benchResult{Scenario: "idle"}
	res.param("seconds", f.idle.Seconds())

	instanceDSN := e.dsn
	var proxy *countingProxy
	if hostPort, err := dsnHostPort(e.dsn); err == nil {
		if proxy, err = startCountingProxy(hostPort); err != nil {
			return nil, err
		}
		defer proxy.close()
		instanceDSN = viaProxy(e.dsn, proxy.addr())
	} else {
		res.note("no statement breakdown: %v", err)
	}
	child := childBinary(f.binary)
	res.param("child_process", child)
	var in benchInstance
	if child {
		in, err = startChild(ctx, b, instanceDSN, "bench-idle")
	} else {
		res.note("in-process instance (no chronos binary: pass --binary): the RSS is the bench's own")
		in, err = startInProcess(ctx, b, instanceDSN, "bench-idle")
	}
	if err != nil {
		return nil, fmt.Errorf("start idle instance: %w", err)
	}
	e.insts = append(e.insts, in)
	if err := e.waitLeader(ctx); err != nil {
		return nil, err
	}
	// The bench's own pool goes quiet: every query from here on is the
	// instance's, or the sampling below.
	e.db.Pool.Reset()
	if err := sleepCtx(ctx, idleSettle); err != nil {
		return nil, err
	}

	sampler, err := newStatSampler(ctx, e)
	if err != nil {
		return nil, err
	}
	defer sampler.close()
	before, err := sampler.sample(ctx)
	if err != nil {
		return nil, err
	}
	if proxy != nil {
		proxy.take()
	}
	start := time.Now()
	if err := sleepCtx(ctx, f.idle); err != nil {
		return nil, err
	}
	after, err := sampler.sample(ctx)
	if err != nil {
		return nil, err
	}
	secs := time.Since(start).Seconds()
	delta := after - before - sampler.own
	res.param("source", sampler.source)
	res.metric("db_per_s", delta/secs, sampler.unit+"/s")
	res.metric("db_per_idle_poll", delta/secs*reactor.DefaultIdlePollInterval.Seconds(), sampler.unit)
	if proxy != nil {
		counts := proxy.take()
		total, nonLeader := 0, 0
		for k, n := range counts {
			total += n
			switch stmtClass(k.Query) {
			case "ping", "leader_trylock", "leader_lookup", "materialize_due", "materialize_unscheduled",
				"materialize_advance", "reap", "prune", "begin/commit":
			default:
				nonLeader += n
			}
		}
		res.metric("statements_per_s", float64(total)/secs, "stmts/s")
		res.metric("non_leader_per_idle_poll", float64(nonLeader)/secs*reactor.DefaultIdlePollInterval.Seconds(), "stmts")
		res.Notes = append(res.Notes, "statements in "+strconv.FormatFloat(secs, 'f', 1, 64)+"s: "+strings.Join(breakdown(counts, in.name()), ", "))
	}
	rss, peak, err := rssKiB(in.pid())
	if err != nil {
		return nil, fmt.Errorf("read RSS: %w", err)
	}
	res.metric("rss", float64(rss)/1024, "MiB")
	res.metric("rss_peak", float64(peak)/1024, "MiB")
	return res, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// statSampler reads the database's statement (or transaction) counter
// from a connection of its own, to the server's maintenance database when
// the bench owns the server's database, so its own reads are not counted.
type statSampler struct {
	conn   *pgx.Conn
	db     string
	source string // "pg_stat_statements" or "pg_stat_database"
	unit   string
	own    float64 // sampling statements counted in the delta
}

func newStatSampler(ctx context.Context, e *benchEnv) (*statSampler, error) {
	dsn, own := e.dsn, 1.0
	if e.admin != "" {
		dsn, own = e.admin, 0
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("stats connection: %w", err)
	}
	s := &statSampler{conn: conn, db: e.dbName, source: "pg_stat_database", unit: "xacts", own: own}
	var calls float64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_statements").Scan(&calls); err == nil {
		s.source, s.unit = "pg_stat_statements", "stmts"
	}
	return s, nil
}

func (s *statSampler) sample(ctx context.Context) (float64, error) {
	// Statistics are cached per transaction; each sample is its own.
	var v float64
	var err error
	if s.source == "pg_stat_statements" {
		err = s.conn.QueryRow(ctx, `
			SELECT coalesce(sum(calls), 0)::float8 FROM pg_stat_statements
			 WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)`, s.db).Scan(&v)
	} else {
		err = s.conn.QueryRow(ctx, `
			SELECT (xact_commit + xact_rollback)::float8 FROM pg_stat_database WHERE datname = $1`, s.db).Scan(&v)
	}
	if err != nil {
		return 0, fmt.Errorf("sample %s: %w", s.source, err)
	}
	return v, nil
}

func (s *statSampler) close() { _ = s.conn.Close(context.Background()) }

// dsnHostPort is the TCP address a DSN connects to.
func dsnHostPort(dsn string) (string, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "", err
	}
	if strings.HasPrefix(cfg.Host, "/") || cfg.TLSConfig != nil {
		return "", errNoTCP
	}
	return net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), nil
}

// viaProxy rewrites dsn to connect to addr instead.
func viaProxy(dsn, addr string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if u, err := url.Parse(dsn); err == nil {
			u.Host = addr
			return u.String()
		}
	}
	host, port, _ := net.SplitHostPort(addr)
	return dsn + " host=" + host + " port=" + port
}

// benchScale: many jobs defined. A materializer tick with 1,000 due and a
// GET /v1/jobs?limit=100 page at the start, middle and end, first on 1,000
// jobs and then on --scale-jobs, so any slow-down shows side by side.
func benchScale(ctx context.Context, b *bencher) (*benchResult, error) {
	f := b.flags
	e, err := b.newEnv(ctx)
	if err != nil {
		return nil, err
	}
	defer e.close()
	res := &benchResult{Scenario: "scale"}
	res.param("jobs", f.scaleJobs)

	// The API alone: a reactor's materializer would take the due jobs
	// before the timed tick could.
	api, err := startAPIOnly(e)
	if err != nil {
		return nil, err
	}
	defer api.stop()

	small := min(1000, f.scaleJobs)
	if _, err := e.insertJobs(ctx, small); err != nil {
		return nil, err
	}
	if err := e.measureScale(ctx, api.url, res, "small"); err != nil {
		return nil, err
	}
	start := time.Now()
	bypass, err := e.insertJobs(ctx, f.scaleJobs-small)
	if err != nil {
		return nil, err
	}
	took := time.Since(start)
	if _, err := e.db.Pool.Exec(ctx, "VACUUM ANALYZE jobs"); err != nil {
		return nil, fmt.Errorf("vacuum analyze jobs: %w", err)
	}
	res.metric("insert_jobs_per_s", float64(f.scaleJobs-small)/took.Seconds(), "jobs/s")
	if bypass {
		res.note("bulk insert ran with session_replication_role=replica: no per-job NOTIFY")
	}
	if err := e.measureScale(ctx, api.url, res, "large"); err != nil {
		return nil, err
	}
	res.note("small = %d jobs, large = %d jobs; ticks and pages are medians of several", small, f.scaleJobs)
	return res, nil
}

// insertJobs adds n yearly cron jobs in one INSERT ... SELECT. It skips the
// per-row NOTIFY trigger when it may (superuser: session_replication_role),
// since nobody listens here and a million notifications only cost time.
func (e *benchEnv) insertJobs(ctx context.Context, n int) (bypassed bool, err error) {
	if n <= 0 {
		return false, nil
	}
	next := time.Date(time.Now().UTC().Year()+1, 1, 1, 0, 0, 0, 0, time.UTC)
	tx, err := e.db.Pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	if _, err := tx.Exec(ctx, "SAVEPOINT s"); err != nil {
		return false, err
	}
	if _, err := tx.Exec(ctx, "SET LOCAL session_replication_role = replica"); err == nil {
		bypassed = true
	} else if _, err := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT s"); err != nil {
		return false, err
	}
	_, err = tx.Exec(ctx, `
		INSERT INTO jobs (name, cron_expr, target_url, next_run_at, max_retries)
		SELECT 'bench-scale-' || (SELECT coalesce(max(id), 0) FROM jobs) + g, '0 0 1 1 *', $1, $2, 0 FROM generate_series(1, $3) g`,
		e.target.base+"/scale", next, n)
	if err != nil {
		return false, fmt.Errorf("insert %d jobs: %w", n, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("insert %d jobs: %w", n, err)
	}
	return bypassed, nil
}

// measureScale times materializer ticks (with 1,000 due and with none) and
// list pages at the start, middle and end of the jobs table.
func (e *benchEnv) measureScale(ctx context.Context, apiURL string, res *benchResult, label string) error {
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
		if _, err := e.db.Pool.Exec(ctx, "UPDATE jobs SET next_run_at = now() - interval '1 second' WHERE id = ANY($1)", ids); err != nil {
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
func (e *benchEnv) materializeTick(ctx context.Context) (time.Duration, int, error) {
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

// get fetches a URL and checks for 200.
func (e *benchEnv) get(ctx context.Context, u string) error {
	req, err := nethttp.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return err
	}
	resp, err := e.target.client.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	var sink [32 << 10]byte
	for {
		if _, err := resp.Body.Read(sink[:]); err != nil {
			break
		}
	}
	if resp.StatusCode != nethttp.StatusOK {
		return fmt.Errorf("GET %s: status %d", u, resp.StatusCode)
	}
	return nil
}

// apiOnly is the HTTP API on the bench's pool, without a reactor.
type apiOnly struct {
	url  string
	srv  *nethttp.Server
	stop func()
}

func startAPIOnly(e *benchEnv) (*apiOnly, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	api := chttp.NewServer(chttp.Config{Instance: "bench-scale", AuthDisabled: true, TargetPolicy: chronos.TargetPolicy{AllowPrivate: true}}, e.db, bus.New(), nil, e.b.log)
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
