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
	"github.com/chronoshq/chronos/reactor/reactortest"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// Ticket 16: linear backoff. backoff = linear spaces retries base·n apart,
// capped; exponential (base·2^(n-1), jittered down by up to 20%) stays the
// default; the strategy is set per job through the API. Spacing is measured
// on the recorded attempt start times.
func TestTicket16LinearBackoff(t *testing.T) {
	t.Parallel()
	dsn := sqltest.NewURL(t)
	tg := rxNewTarget(t, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		w.WriteHeader(nethttp.StatusInternalServerError)
	})
	in := rxStart(t, dsn, "t16", rxOptions{Reactor: true, Listener: true})
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
	linear := create(map[string]any{"backoff": "linear", "backoff_base_seconds": 0.2, "backoff_max_seconds": 10, "max_retries": 4})
	capped := create(map[string]any{"backoff": "linear", "backoff_base_seconds": 0.2, "backoff_max_seconds": 0.3, "max_retries": 3})
	def := create(map[string]any{"backoff_base_seconds": 0.15, "backoff_max_seconds": 10, "max_retries": 4})
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
	// A gap may exceed its delay by the time an attempt takes plus claim
	// and completion latency (milliseconds when the machine is quiet). The
	// bound is generous, yet below what exponential backoff would give the
	// linear job at its fourth retry (at least 0.8·1.6s = 1.28s > 0.8s +
	// slack). For the default job the lower bounds are what show it is
	// exponential (its fourth retry waits at least 0.96s, linear 0.6s).
	const slack = 450 * time.Millisecond
	check := func(name string, want []time.Duration, jitter bool) {
		t.Helper()
		r := reactortest.WaitStatus(t, in.DB, runs[name], chronos.StatusDead, 20*time.Second)
		if len(r.Attempts) != len(want)+1 {
			t.Fatalf("%s: %d attempts, want %d", name, len(r.Attempts), len(want)+1)
		}
		for i, w := range want {
			gap := r.Attempts[i+1].StartedAt.Sub(r.Attempts[i].StartedAt)
			lo, hi := w, w+slack
			if jitter {
				lo, hi = w*8/10, w+time.Second
			}
			if gap < lo || gap > hi {
				t.Errorf("%s: retry %d came %s after attempt %d, want %s..%s", name, i+1, gap, i+1, lo, hi)
			} else {
				t.Logf("%s: retry %d after %s (delay %s)", name, i+1, gap, w)
			}
		}
	}
	ms := func(v ...int) []time.Duration {
		d := make([]time.Duration, len(v))
		for i, x := range v {
			d[i] = time.Duration(x) * time.Millisecond
		}
		return d
	}
	check("linear", ms(200, 400, 600, 800), false)
	check("capped", ms(200, 300, 300), false)
	check("default", ms(150, 300, 600, 1200), true)
}
