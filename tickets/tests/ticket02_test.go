package tests

import (
	nethttp "net/http"
	"strconv"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/reactor/reactortest"
)

// Ticket 02: a 3xx is not success. Only 2xx marks an attempt succeeded;
// 300/301/302 (and 4xx) are failures that retry and, exhausted, dead-letter
// with the status recorded; redirects are not followed.
func TestTicket02RedirectIsNotSuccess(t *testing.T) {
	dsn := parallelDSN(t)
	dest := rxNewTarget(t, nil) // where the redirects point: never to be hit
	tg := rxNewTarget(t, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		code, _ := strconv.Atoi(r.URL.Query().Get("code"))
		if code >= 300 && code < 400 {
			w.Header().Set("Location", dest.URL+"/landed")
		}
		w.WriteHeader(code)
	})
	in := rxStart(t, dsn, "t02", rxOptions{Reactor: true})

	const maxRetries = 1
	runs := map[int]int64{}
	for _, code := range []int{200, 204, 300, 301, 302, 404} {
		j := rxJob(t, in.DB, &chronos.Job{
			TargetURL: tg.URL + "/?code=" + strconv.Itoa(code), MaxRetries: maxRetries,
			Backoff: chronos.BackoffLinear, BackoffBaseSeconds: 0.05, BackoffMaxSeconds: 0.05,
		})
		runs[code] = in.Trigger(t, j.ID).ID
	}
	for code, id := range runs {
		want := chronos.StatusDead
		attempts := maxRetries + 1
		if code < 300 {
			want, attempts = chronos.StatusSucceeded, 1
		}
		r := reactortest.WaitTerminal(t, in.DB, id, 30*time.Second)
		if r.Status != want {
			t.Errorf("HTTP %d: run is %s, want %s", code, r.Status, want)
		}
		if r.LastStatusCode == nil || *r.LastStatusCode != code {
			t.Errorf("HTTP %d: last_status_code %v, want %d", code, r.LastStatusCode, code)
		}
		if len(r.Attempts) != attempts {
			t.Errorf("HTTP %d: %d attempts, want %d", code, len(r.Attempts), attempts)
		}
		for _, a := range r.Attempts {
			if a.StatusCode == nil || *a.StatusCode != code {
				t.Errorf("HTTP %d: attempt %d recorded status %v", code, a.Attempt, a.StatusCode)
			}
			if code >= 300 && (a.Error == nil || *a.Error == "") {
				t.Errorf("HTTP %d: attempt %d recorded no error", code, a.Attempt)
			}
		}
		if code >= 300 && (r.LastError == nil || *r.LastError == "") {
			t.Errorf("HTTP %d: dead run has no last_error", code)
		}
	}
	if n := dest.Hits.Load(); n != 0 {
		t.Errorf("the redirect target was hit %d times; redirects must not be followed", n)
	}
}
