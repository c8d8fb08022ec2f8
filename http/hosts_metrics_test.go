package http

import (
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// TestHostMetrics: chronos_host_breakers_open counts the origins whose
// breaker is open or probing, chronos_hosts_deferred those a Retry-After
// holds now; an origin with failures counted but a closed breaker, or a
// deferral that has ended, is in neither; a breaker that closes leaves the
// count. No origin label.
func TestHostMetrics(t *testing.T) {
	e := parallelEnv(t)
	e.wantScraped("chronos_host_breakers_open 0\n", "chronos_hosts_deferred 0\n")

	ctx := t.Context()
	const (
		open     = "http://127.0.0.1:9"
		probing  = "http://127.0.0.1:10"
		failing  = "http://127.0.0.1:11"
		deferred = "http://127.0.0.1:12"
		ended    = "http://127.0.0.1:13"
	)
	report := func(r sql.HostReport, b sql.Breaker) {
		t.Helper()
		if _, err := e.db.ReportHosts(ctx, []sql.HostReport{r}, b); err != nil {
			t.Fatalf("report %s: %v", r.Origin, err)
		}
	}
	report(sql.HostReport{Origin: open, Failures: 3, StatusCode: 502}, sql.Breaker{Failures: 3, Cooldown: time.Hour})
	report(sql.HostReport{Origin: probing, Failures: 1, StatusCode: 502}, sql.Breaker{Failures: 1}) // no cooldown: probing at once
	report(sql.HostReport{Origin: failing, Failures: 1, StatusCode: 502}, sql.Breaker{Failures: 3, Cooldown: time.Hour})
	e.deferHost(deferred, time.Hour)
	// Deferred until the instant of its own transaction: over for every
	// later statement, by the database's clock, which the gauge reads too.
	e.deferHost(ended, 0)
	for origin, want := range map[string]chronos.HostState{open: chronos.HostOpen, probing: chronos.HostProbing,
		failing: chronos.HostOK, deferred: chronos.HostDeferred, ended: chronos.HostOK} {
		if h, err := e.db.Host(ctx, origin); err != nil || h.State != want {
			t.Fatalf("host %s: %+v %v, want %s", origin, h, err, want)
		}
	}
	e.wantScraped("chronos_host_breakers_open 2\n", "chronos_hosts_deferred 1\n")

	report(sql.HostReport{Origin: open, Answered: true}, sql.Breaker{Failures: 3, Cooldown: time.Hour})
	e.wantScraped("chronos_host_breakers_open 1\n", "chronos_hosts_deferred 1\n")
}

// deferHost has origin defer its runs for d, as a 429 with Retry-After
// does: a run of a job on origin is created, claimed and deferred.
func (e *env) deferHost(origin string, d time.Duration) {
	e.t.Helper()
	body := cronJob("deferred-" + origin[len("http://127.0.0.1:"):])
	body["target_url"] = origin + "/hook"
	job := e.createJob(body)
	ctx := e.t.Context()
	if _, err := e.db.Pool.Exec(ctx, `
		INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at)
		VALUES ($1, now(), 'manual', now() - interval '1 second')`, job.ID); err != nil {
		e.t.Fatal(err)
	}
	c, err := e.db.Claim(ctx, "w", 1, time.Minute)
	if err != nil || len(c) != 1 || c[0].Run.JobID != job.ID {
		e.t.Fatalf("claim the run of %s: %d claimed, %v", origin, len(c), err)
	}
	res, err := e.db.Defer(ctx, sql.Deferral{Lease: c[0].Lease(), Origin: origin, Delay: d, StatusCode: 429, MaxDeferrals: 20})
	if err != nil || !res.Deferred {
		e.t.Fatalf("defer %s: %+v %v", origin, res, err)
	}
}
