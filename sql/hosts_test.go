package sql_test

import (
	"slices"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/internal/fixtures"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// chronos_origin (migration 023) names the origin chronos.Origin names, on
// every case of the file the Go test reads.
func TestChronosOriginAgreesWithGo(t *testing.T) {
	t.Parallel()
	db := sqltest.New(t)
	for _, c := range fixtures.Origins(t, "..") {
		var got string
		if err := db.Pool.QueryRow(t.Context(), "SELECT chronos_origin($1)", c.URL).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != c.Origin || got != chronos.Origin(c.URL) {
			t.Errorf("chronos_origin(%q) = %q; Go says %q, want %q", c.URL, got, chronos.Origin(c.URL), c.Origin)
		}
	}
}

// hostJob creates a one-shot-free job delivering to target, with n pending
// runs due now.
func hostJob(t *testing.T, db *sql.DB, target string, n int) *chronos.Job {
	t.Helper()
	j := cronJob("0 0 1 1 *")
	j.TargetURL = target
	mustCreate(t, db, j)
	insertPending(t, db, j.ID, n)
	return j
}

// claimAll claims every run claimable now.
func claimAll(t *testing.T, db *sql.DB) []sql.Claimed {
	t.Helper()
	got, err := db.Claim(t.Context(), "w", 1000, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func jobsOf(cs []sql.Claimed) map[int64]int {
	m := map[int64]int{}
	for _, c := range cs {
		m[c.Run.JobID]++
	}
	return m
}

// A 429 with Retry-After defers the run and every pending run of its
// origin (other paths on it too), not the runs of another origin; the
// deferred run keeps its attempt count, and the claim does not take any
// of them until the deferral ends.
func TestDeferHoldsOriginKeepsAttempts(t *testing.T) {
	db, ctx := parallelDB(t)
	bad := hostJob(t, db, "http://127.0.0.1:9/a", 1)
	badToo := hostJob(t, db, "http://127.0.0.1:9/b?x=1", 3)
	good := hostJob(t, db, "http://127.0.0.1:10/a", 2)

	c, err := db.Claim(ctx, "w", 1, time.Minute)
	if err != nil || len(c) != 1 {
		t.Fatalf("claim: %v %d", err, len(c))
	}
	claimed := c[0]
	origin := chronos.Origin(bad.TargetURL)
	if chronos.Origin(badToo.TargetURL) != origin || claimed.Run.JobID == good.ID {
		t.Fatalf("setup: first claimed run is of job %d", claimed.Run.JobID)
	}
	before := time.Now()
	res, err := db.Defer(ctx, sql.Deferral{Lease: claimed.Lease(), Origin: origin, Delay: 2 * time.Second,
		StatusCode: 429, Error: "HTTP 429 Too Many Requests", MaxDeferrals: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Deferred || !res.Started || res.Moved != 3 || res.Until.Before(before.Add(1500*time.Millisecond)) {
		t.Fatalf("defer: %+v", res)
	}
	r := mustRun(t, db, claimed.Run.ID)
	if r.Status != chronos.StatusPending || r.AttemptCount != 0 || r.AvailableAt.Before(res.Until) ||
		r.LastStatusCode == nil || *r.LastStatusCode != 429 {
		t.Fatalf("deferred run: %+v", r)
	}
	// Only the other origin's runs are claimable now.
	got := jobsOf(claimAll(t, db))
	if got[good.ID] != 2 || got[bad.ID]+got[badToo.ID] != 0 {
		t.Fatalf("claimed during the deferral: %v", got)
	}
	var early int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM job_runs WHERE job_id = ANY($1) AND available_at < $2`,
		[]int64{bad.ID, badToo.ID}, res.Until).Scan(&early); err != nil || early != 0 {
		t.Fatalf("%d runs of the origin due before the deferral's end (%v)", early, err)
	}
	// The deferred run goes first; the others a second later (one
	// request, not a burst, if the host still says "later").
	if err := db.Pool.QueryRow(ctx, `
		SELECT count(*) FROM job_runs WHERE job_id = ANY($1) AND id <> $3 AND available_at < $2::timestamptz + interval '1 second'`,
		[]int64{bad.ID, badToo.ID}, res.Until, claimed.Run.ID).Scan(&early); err != nil || early != 0 {
		t.Fatalf("%d other runs of the origin due within a second of the deferral's end (%v)", early, err)
	}
	h, err := db.Host(ctx, origin)
	if err != nil || h.State != chronos.HostDeferred || h.Deferrals != 1 || h.DeferredUntil == nil {
		t.Fatalf("host: %+v %v", h, err)
	}
	// A run created during the deferral waits too: it is due at the
	// deferral's end from its insert (migration 026), so the claim does
	// not even walk past it, and the sweep has nothing to move. Another
	// origin's new run is due at once.
	insertPending(t, db, badToo.ID, 1)
	insertPending(t, db, good.ID, 1)
	if got := jobsOf(claimAll(t, db)); got[good.ID] != 1 || len(got) != 1 {
		t.Fatalf("claimed after runs were created during the deferral: %v", got)
	}
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM job_runs WHERE job_id = ANY($1) AND available_at < $2`,
		[]int64{bad.ID, badToo.ID}, res.Until).Scan(&early); err != nil || early != 0 {
		t.Fatalf("%d runs of the origin due before the deferral's end (%v)", early, err)
	}
	sw, err := db.SweepHosts(ctx, time.Second)
	if err != nil || sw.Held != 1 || sw.Moved != 0 {
		t.Fatalf("sweep: %+v %v", sw, err)
	}
	// After the deferral, the runs go, each with its attempt count.
	var all []sql.Claimed
	for deadline := time.Now().Add(20 * time.Second); len(all) < 5 && time.Now().Before(deadline); {
		all = append(all, claimAll(t, db)...)
		time.Sleep(50 * time.Millisecond)
	}
	if len(all) != 5 {
		t.Fatalf("%d runs claimed after the deferral, want 5", len(all))
	}
	for _, c := range all {
		if c.Run.AttemptCount != 1 {
			t.Errorf("run %d attempt %d after a deferral, want 1", c.Run.ID, c.Run.AttemptCount)
		}
		if c.Run.ID == claimed.Run.ID {
			claimed = c
		}
	}
	// Past MaxDeferrals the answer is an attempt: Defer writes nothing.
	res, err = db.Defer(ctx, sql.Deferral{Lease: claimed.Lease(), Origin: origin, Delay: time.Second, MaxDeferrals: 1})
	if err != nil || res.Deferred {
		t.Fatalf("defer past the bound: %+v %v", res, err)
	}
	if r := mustRun(t, db, claimed.Run.ID); r.Status != chronos.StatusLeased || r.AttemptCount != 1 {
		t.Fatalf("run after a refused deferral: %+v", r)
	}
	// A stale lease is refused.
	stale := claimed.Lease()
	stale.Worker = "other"
	if _, err := db.Defer(ctx, sql.Deferral{Lease: stale, Origin: origin, Delay: time.Second, MaxDeferrals: 9}); err == nil {
		t.Fatal("defer with a stale lease succeeded")
	}
}

// Consecutive failures open the breaker: the origin's runs wait, the
// sweep picks one probe, which alone goes after the cooldown; its failure
// reopens the breaker, its success closes it and the other runs go.
func TestBreakerOpensProbesCloses(t *testing.T) {
	db, ctx := parallelDB(t)
	bad := hostJob(t, db, "http://127.0.0.1:9/hook", 4)
	good := hostJob(t, db, "http://127.0.0.1:10/hook", 1)
	origin := chronos.Origin(bad.TargetURL)
	b := sql.Breaker{Failures: 3, Cooldown: time.Second}

	// Two failures, an answer (the count starts again), two failures: closed.
	for _, r := range []sql.HostReport{
		{Origin: origin, Failures: 2, StatusCode: 502},
		{Origin: origin, Answered: true},
		{Origin: origin, Failures: 2},
	} {
		if ch, err := db.ReportHosts(ctx, []sql.HostReport{r}, b); err != nil || len(ch) != 0 {
			t.Fatalf("report %+v: %+v %v", r, ch, err)
		}
	}
	ch, err := db.ReportHosts(ctx, []sql.HostReport{{Origin: origin, Failures: 1, Error: "connection refused"}}, b)
	if err != nil || len(ch) != 1 || !ch[0].Opened || ch[0].Failures != 3 || ch[0].Moved != 4 {
		t.Fatalf("third failure: %+v %v", ch, err)
	}
	// A run created while it is open is due no sooner than the runs it
	// moved (migration 026): not claimable, not the probe.
	insertPending(t, db, bad.ID, 1)
	if got := jobsOf(claimAll(t, db)); got[good.ID] != 1 || got[bad.ID] != 0 {
		t.Fatalf("claimed with the breaker open: %v", got)
	}
	var late int
	if err := db.Pool.QueryRow(ctx, `
		SELECT count(*) FROM job_runs r, hosts h
		 WHERE r.job_id = $1 AND h.origin = $2 AND r.available_at >= h.pushed_until`, bad.ID, origin).
		Scan(&late); err != nil || late != 2 {
		t.Fatalf("%d runs of the origin due at the last moved one's instant, want it and the new one (%v)", late, err)
	}
	if h, err := db.Host(ctx, origin); err != nil || (h.State != chronos.HostOpen && h.State != chronos.HostProbing) || h.BreakerOpens != 1 {
		t.Fatalf("host: %+v %v", h, err)
	}
	probe := sweepProbe(t, db, b)
	// The probe alone goes, after the cooldown.
	c := waitClaim(t, db)
	if len(c) != 1 || c[0].Run.ID != probe {
		t.Fatalf("claimed %d runs at the cooldown's end, want the probe %d", len(c), probe)
	}
	// It fails: the breaker reopens.
	if _, err := db.Complete(ctx, []sql.Outcome{{Lease: c[0].Lease(), Error: "refused"}}); err != nil {
		t.Fatal(err)
	}
	ch, err = db.ReportHosts(ctx, []sql.HostReport{{Origin: origin, Failures: 1, FailedRuns: []int64{probe}}}, b)
	if err != nil || len(ch) != 1 || !ch[0].Opened {
		t.Fatalf("probe failed: %+v %v", ch, err)
	}
	if h, _ := db.Host(ctx, origin); h.BreakerOpens != 2 || h.ProbeRunID != nil {
		t.Fatalf("host after the probe failed: %+v", h)
	}
	probe = sweepProbe(t, db, b)
	c = waitClaim(t, db)
	if len(c) != 1 || c[0].Run.ID != probe {
		t.Fatalf("claimed %d runs at the second cooldown's end, want the probe %d", len(c), probe)
	}
	// It answers: closed, and the other runs go now (the first probe is
	// dead: a job without retries).
	var waiting int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM job_runs WHERE job_id = $1 AND status = 'pending'", bad.ID).
		Scan(&waiting); err != nil || waiting < 2 {
		t.Fatalf("%d runs waiting (%v)", waiting, err)
	}
	ch, err = db.ReportHosts(ctx, []sql.HostReport{{Origin: origin, Answered: true}}, b)
	if err != nil || len(ch) != 1 || !ch[0].Closed {
		t.Fatalf("probe answered: %+v %v", ch, err)
	}
	// Due again at once (spread a millisecond apart), not a cooldown later.
	var back []sql.Claimed
	for deadline := time.Now().Add(time.Second); len(back) < waiting && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		back = append(back, claimAll(t, db)...)
	}
	if got := jobsOf(back); got[bad.ID] != waiting {
		t.Fatalf("claimed within a second of the breaker closing: %v", got)
	}
	if h, _ := db.Host(ctx, origin); h.State != chronos.HostOK || h.ConsecutiveFailures != 0 {
		t.Fatalf("host after closing: %+v", h)
	}
	// Off (Failures 0): failures are counted, nothing opens.
	ch, err = db.ReportHosts(ctx, []sql.HostReport{{Origin: origin, Failures: 50}}, sql.Breaker{})
	if err != nil || len(ch) != 0 {
		t.Fatalf("breaker off: %+v %v", ch, err)
	}
	troubled, held, err := db.TroubledHosts(ctx)
	if err != nil || !slices.Equal(troubled, []string{origin}) || held {
		t.Fatalf("troubled hosts: %v %v %v", troubled, held, err)
	}
}

// sweepProbe sweeps and returns the probe it picked.
func sweepProbe(t *testing.T, db *sql.DB, b sql.Breaker) int64 {
	t.Helper()
	sw, err := db.SweepHosts(t.Context(), b.Cooldown)
	if err != nil || sw.Probes != 1 {
		t.Fatalf("sweep: %+v %v", sw, err)
	}
	h, err := db.Host(t.Context(), chronos.Origin("http://127.0.0.1:9/"))
	if err != nil || h.ProbeRunID == nil {
		t.Fatalf("host after the sweep: %+v %v", h, err)
	}
	return *h.ProbeRunID
}

// waitClaim claims until something is claimed (10 s at most).
func waitClaim(t *testing.T, db *sql.DB) []sql.Claimed {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c := claimAll(t, db); len(c) > 0 {
			return c
		}
	}
	t.Fatal("nothing claimed in 10 s")
	return nil
}
