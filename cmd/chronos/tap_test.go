package main

import (
	"context"
	"fmt"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
)

// TestTapReconnects: the tap prints events as human lines, and when the
// stream ends it reconnects and carries on.
func TestTapReconnects(t *testing.T) {
	t.Parallel()
	var conns atomic.Int32
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if r.Header.Get("Authorization") != "Bearer k" {
			w.WriteHeader(401)
			fmt.Fprint(w, `{"error":{"code":"unauthorized","message":"wrong key"}}`)
			return
		}
		if got := r.URL.Query().Get("job_id") + "|" + r.URL.Query().Get("type"); got != "3|run." {
			t.Errorf("query %q, want job_id=3 type=run.", r.URL.RawQuery)
		}
		n := conns.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, ": chronos event tap, instance i%d\n\n", n)
		fmt.Fprintf(w, "event: run.attempted\ndata: {\"type\":\"run.attempted\",\"time\":\"2026-12-02T14:00:00Z\",\"job_id\":3,\"run_id\":%d,\"status\":\"succeeded\",\"attempt\":1,\"status_code\":204,\"duration_ms\":1.5,\"instance\":\"i%d\"}\n\n", 10+n, n)
		w.(nethttp.Flusher).Flush()
		if n >= 2 {
			<-r.Context().Done() // hold the second stream open
		}
	}))
	defer srv.Close()

	out, errOut := newLines(), newLines()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- tap(ctx, tapOptions{urls: []string{srv.URL}, key: "k", job: "3", typ: "run."}, out, errOut)
	}()
	out.wait(t, ` run.attempted +job=3 run=11 attempt=1 succeeded http=204 1\.5ms @i1$`, 20*time.Second)
	errOut.wait(t, `connected to .* \(instance i1\)`, 10*time.Second)
	errOut.wait(t, `stream closed by the instance; reconnecting in 250ms`, 20*time.Second)
	out.wait(t, ` run=12 .*@i2$`, 20*time.Second)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("tap returned %v after cancel, want nil", err)
	}

	// A refused key is not retried.
	err := tap(context.Background(), tapOptions{urls: []string{srv.URL}, key: "bad"}, newLines(), newLines())
	if err == nil || !strings.Contains(err.Error(), "401 wrong key") {
		t.Errorf("bad key: %v", err)
	}
}

func TestFormatEvent(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		e    chronos.Event
		want string // after the time
	}{
		{chronos.Event{Type: chronos.EventAttempted, JobID: 1, RunID: 2, Attempt: 3, Status: chronos.StatusDead, StatusCode: 500, Error: "HTTP 500", Instance: "a"},
			`run.attempted             job=1 run=2 attempt=3 dead http=500 error="HTTP 500" @a`},
		{chronos.Event{Type: chronos.EventLeaderChanged, Instance: "b", Leader: true}, `leader.changed            now leads @b`},
		{chronos.Event{Type: chronos.EventLeaderChanged, Instance: "b", Op: "resigned"}, `leader.changed            resigned @b`},
		{chronos.Event{Type: chronos.EventMaterialized, Count: 4}, `materializer.materialized count=4`},
		{chronos.Event{Type: chronos.EventJobChanged, JobID: 9, Op: "created"}, `job.changed               job=9 created`},
	} {
		tc.e.Time = at
		got := formatEvent(tc.e, false)
		if want := at.Local().Format("15:04:05.000") + " " + tc.want; got != want {
			t.Errorf("got  %q\nwant %q", got, want)
		}
	}
	if got := formatEvent(chronos.Event{Type: chronos.EventAttempted, Status: chronos.StatusSucceeded, Time: at}, true); !strings.Contains(got, ansiGreen+"succeeded"+ansiReset) {
		t.Errorf("colour: %q", got)
	}
}

// An unreachable URL is given up on after --give-up, with exit code 1.
func TestTapGivesUp(t *testing.T) {
	t.Parallel()
	began := time.Now()
	code, _, errOut := runCmd(t, nil, "tap", "--url", "http://127.0.0.1:1", "--give-up", "500ms")
	if code != 1 || !strings.Contains(errOut, "no instance answered for 500ms") {
		t.Fatalf("exit %d, stderr %q; want 1 and a give-up message", code, errOut)
	}
	if took := time.Since(began); took < 500*time.Millisecond || took > 20*time.Second {
		t.Fatalf("gave up after %s, want about 500ms", took)
	}
	// An instance that only answers 503 is no better.
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		w.WriteHeader(nethttp.StatusServiceUnavailable)
	}))
	defer srv.Close()
	if code, _, errOut := runCmd(t, nil, "tap", "--url", srv.URL, "--give-up", "300ms"); code != 1 || !strings.Contains(errOut, "503") {
		t.Fatalf("503 instance: exit %d, stderr %q", code, errOut)
	}
}

// --job is checked before connecting.
func TestTapChecksJobFirst(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) { hits.Add(1) }))
	defer srv.Close()
	for _, job := range []string{"abc", "3,x", "-1", "0", "3,"} {
		code, _, errOut := runCmd(t, nil, "tap", "--url", srv.URL, "--job", job)
		if code != 2 || !strings.Contains(errOut, "invalid --job") {
			t.Errorf("--job %q: exit %d, stderr %q; want 2", job, code, errOut)
		}
	}
	if hits.Load() != 0 {
		t.Errorf("the tap connected %d times despite a bad --job", hits.Load())
	}
}
