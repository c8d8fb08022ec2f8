package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	nethttp "net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	chttp "github.com/chronoshq/chronos/http"
	"github.com/chronoshq/chronos/reactor"
	"github.com/chronoshq/chronos/reactor/reactortest"
)

// Ticket 16: linear backoff. backoff = linear spaces retries base·n apart,
// capped; exponential (base·2^(n-1), jittered down by up to 20%) stays the
// default; the strategy is set per job through the API. Spacing is measured
// on the recorded attempt start times.
//
// A retry can come late on a loaded machine, never early: every gap is
// checked against its delay as a lower bound. Upper bounds are only ever
// wide ones, on the whole run, chosen so that the wrong strategy would
// need several seconds more than the right one plus generous slack.
func TestTicket16LinearBackoff(t *testing.T) {
	dsn := parallelDSN(t)
	tg := rxNewTarget(t, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		w.WriteHeader(nethttp.StatusInternalServerError)
	})
	// Every attempt fails on purpose: the host breaker (issue 24) would
	// hold the retries this ticket times, so it is off here.
	in := rxStart(t, dsn, "t16", rxOptions{Reactor: true, Listener: true,
		Config: reactor.Config{Hosts: reactor.HostConfig{BreakerFailures: -1}}})
	api := chttp.NewServer(chttp.Config{Instance: "t16", AuthDisabled: true, TargetPolicy: chronos.TargetPolicy{AllowPrivate: true}}, in.DB, in.Bus, nil, reactortest.Logger(t)).Handler()

	create := func(body map[string]any) *chronos.Job {
		t.Helper()
		body["name"] = fmt.Sprintf("t16-%d", apiJobSeq.Add(1)) // names are unique
		body["run_at"] = time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)
		body["target_url"] = tg.URL
		b, _ := json.Marshal(body)
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(nethttp.MethodPost, "/v1/jobs", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		api.ServeHTTP(rec, req)
		if rec.Code != nethttp.StatusCreated {
			t.Fatalf("create job: %d %s", rec.Code, rec.Body)
		}
		var j chronos.Job
		if err := json.Unmarshal(rec.Body.Bytes(), &j); err != nil {
			t.Fatal(err)
		}
		return &j
	}
	// linear: 0.1·n for 8 retries, 3.6s in all; exponential on the same
	// base would wait at least 0.8·0.1·(2^8-1) = 20.4s.
	linear := create(map[string]any{"backoff": "linear", "backoff_base_seconds": 0.1, "backoff_max_seconds": 10, "max_retries": 8})
	// capped: 0.5 each time for 6 retries, 3s in all; uncapped linear would
	// wait 0.5·21 = 10.5s.
	capped := create(map[string]any{"backoff": "linear", "backoff_base_seconds": 0.5, "backoff_max_seconds": 0.5, "max_retries": 6})
	// default (exponential): at least 0.8·0.05·2^(n-1), 2.52s in all, its
	// last gap at least 1.28s where linear would wait 0.3s.
	def := create(map[string]any{"backoff_base_seconds": 0.05, "backoff_max_seconds": 10, "max_retries": 6})
	if linear.Backoff != chronos.BackoffLinear {
		t.Fatalf("the API stored backoff %q, want linear", linear.Backoff)
	}
	if def.Backoff != chronos.BackoffExponential {
		t.Fatalf("the default backoff is %q, want exponential", def.Backoff)
	}

	runs := map[string]int64{}
	for name, j := range map[string]*chronos.Job{"linear": linear, "capped": capped, "default": def} {
		runs[name] = in.Trigger(t, j.ID).ID
	}
	// slack is how much longer than its delays a whole run may take: wide,
	// for a loaded machine, and still below what the wrong strategy adds.
	const slack = 6 * time.Second
	check := func(name string, want []time.Duration, spanLimit time.Duration) {
		t.Helper()
		r := reactortest.WaitStatus(t, in.DB, runs[name], chronos.StatusDead, 60*time.Second)
		if len(r.Attempts) != len(want)+1 {
			t.Fatalf("%s: %d attempts, want %d", name, len(r.Attempts), len(want)+1)
		}
		var sum time.Duration
		for i, w := range want {
			sum += w
			gap := r.Attempts[i+1].StartedAt.Sub(r.Attempts[i].StartedAt)
			if gap < w {
				t.Errorf("%s: retry %d came %s after attempt %d, before its delay of %s", name, i+1, gap, i+1, w)
			} else {
				t.Logf("%s: retry %d after %s (delay %s)", name, i+1, gap, w)
			}
		}
		span := r.Attempts[len(r.Attempts)-1].StartedAt.Sub(r.Attempts[0].StartedAt)
		if spanLimit > 0 && span > spanLimit {
			t.Errorf("%s: retries took %s in all, want at most %s (their delays sum to %s)", name, span, spanLimit, sum)
		}
	}
	ms := func(v ...int) []time.Duration {
		d := make([]time.Duration, len(v))
		for i, x := range v {
			d[i] = time.Duration(x) * time.Millisecond
		}
		return d
	}
	check("linear", ms(100, 200, 300, 400, 500, 600, 700, 800), 3600*time.Millisecond+slack)
	check("capped", ms(500, 500, 500, 500, 500, 500), 3*time.Second+slack)
	// Jitter only shortens an exponential delay, by up to 20%.
	check("default", ms(40, 80, 160, 320, 640, 1280), 0)
}
