package http

import (
	"bufio"
	"context"
	"encoding/json"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
)

// tapClient reads one event-tap stream.
type tapClient struct {
	t      *testing.T
	r      *bufio.Reader
	resp   *nethttp.Response
	cancel context.CancelFunc
}

// sseFrame is one event or comment of the stream.
type sseFrame struct {
	comment string
	event   string
	data    chronos.Event
}

func openTap(t *testing.T, e *env, query string) (*tapClient, *httptest.Server) {
	t.Helper()
	ts := httptest.NewServer(e.srv.Handler())
	t.Cleanup(ts.Close)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := nethttp.NewRequestWithContext(ctx, "GET", ts.URL+"/v1/events"+query, nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatalf("open tap: %v", err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("tap: %d %v", resp.StatusCode, resp.Header)
	}
	c := &tapClient{t: t, r: bufio.NewReader(resp.Body), resp: resp, cancel: cancel}
	// The opening comment is written after the subscription exists.
	if f := c.next(); !strings.Contains(f.comment, "event tap") {
		t.Fatalf("first frame %+v", f)
	}
	return c, ts
}

// next reads one frame, failing after a deadline.
func (c *tapClient) next() sseFrame {
	c.t.Helper()
	type res struct {
		f   sseFrame
		err error
	}
	ch := make(chan res, 1)
	go func() {
		var f sseFrame
		for {
			line, err := c.r.ReadString('\n')
			if err != nil {
				ch <- res{err: err}
				return
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case line == "":
				ch <- res{f: f}
				return
			case strings.HasPrefix(line, ":"):
				f.comment = strings.TrimSpace(line[1:])
			case strings.HasPrefix(line, "event: "):
				f.event = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				if err := json.Unmarshal([]byte(line[len("data: "):]), &f.data); err != nil {
					ch <- res{err: err}
					return
				}
			}
		}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			c.t.Fatalf("read tap: %v", r.err)
		}
		return r.f
	case <-time.After(20 * time.Second):
		c.t.Fatal("no frame from the tap within 20s")
		return sseFrame{}
	}
}

func TestTapDeliversFilteredEvents(t *testing.T) {
	e := parallelEnvNoDB(t)
	c, _ := openTap(t, e, "?job_id=7,8&type=run.,job.changed")
	e.bus.Publish(chronos.Event{Type: chronos.EventRunChanged, JobID: 9, RunID: 1})                 // other job
	e.bus.Publish(chronos.Event{Type: chronos.EventClaimed, Count: 3})                              // no job
	e.bus.Publish(chronos.Event{Type: chronos.EventLeaderChanged, JobID: 7})                        // type not asked for
	e.bus.Publish(chronos.Event{Type: chronos.EventAttempted, JobID: 7, RunID: 2, StatusCode: 200}) // prefix run.
	e.bus.Publish(chronos.Event{Type: chronos.EventJobChanged, JobID: 8, Op: "updated"})            // exact
	f := c.next()
	if f.event != "run.attempted" || f.data.RunID != 2 || f.data.StatusCode != 200 || f.data.Type != chronos.EventAttempted {
		t.Fatalf("frame %+v", f)
	}
	f = c.next()
	if f.event != "job.changed" || f.data.JobID != 8 || f.data.Op != "updated" || f.data.Time.IsZero() {
		t.Fatalf("frame %+v", f)
	}
}

func TestTapHeartbeat(t *testing.T) {
	e := parallelEnvNoDB(t)
	e.srv.heartbeat = 20 * time.Millisecond
	c, _ := openTap(t, e, "")
	if f := c.next(); !strings.HasPrefix(f.comment, "heartbeat") {
		t.Fatalf("frame %+v, want a heartbeat", f)
	}
}

func TestTapReportsDrops(t *testing.T) {
	e := parallelEnvNoDB(t)
	e.srv.tapBuffer = 1
	e.srv.heartbeat = 20 * time.Millisecond // drops after the last event are reported with the heartbeat
	c, _ := openTap(t, e, "?type=run.changed")
	// A burst far faster than one client's writes must overflow a
	// one-event buffer; every event is then either delivered or counted.
	for try := 0; try < 20; try++ {
		const n = 500
		for i := 1; i <= n; i++ {
			e.bus.Publish(chronos.Event{Type: chronos.EventRunChanged, RunID: int64(i)})
		}
		got, dropped := 0, 0
		for got+dropped < n {
			f := c.next()
			switch f.event {
			case "run.changed":
				got++
			case "bus.dropped":
				if f.data.Count < 1 {
					t.Fatalf("drop notice without count: %+v", f)
				}
				dropped += f.data.Count
			}
		}
		if got+dropped != n {
			t.Fatalf("delivered %d + dropped %d != published %d", got, dropped, n)
		}
		if dropped > 0 {
			return
		}
	}
	t.Fatal("no drops in 20 bursts of 500 events into a one-event buffer")
}

func TestTapStopsWhenClientLeaves(t *testing.T) {
	e := parallelEnvNoDB(t)
	before := e.bus.Subscribers()
	c, _ := openTap(t, e, "")
	if n := e.bus.Subscribers(); n != before+1 {
		t.Fatalf("%d subscriptions with the tap open, want %d", n, before+1)
	}
	// Events in flight while the client leaves must not keep the handler.
	for i := 0; i < 100; i++ {
		e.bus.Publish(chronos.Event{Type: chronos.EventClaimed, Count: 1})
	}
	c.cancel()
	c.resp.Body.Close()
	// Once the handler is gone its subscription is too. The bound is wide:
	// noticing a closed connection takes the server a moment on a loaded
	// machine, never this long.
	deadline := time.Now().Add(30 * time.Second)
	for e.bus.Subscribers() != before {
		if time.Now().After(deadline) {
			t.Fatal("tap subscription still open 30s after the client left")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRunEndsTaps(t *testing.T) {
	e := parallelEnvNoDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.srv.Run(ctx) }()
	c, _ := openTap(t, e, "")
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	readDone := make(chan error, 1)
	go func() {
		_, err := c.r.ReadString('\n')
		for err == nil {
			_, err = c.r.ReadString('\n')
		}
		readDone <- err
	}()
	select {
	case <-readDone:
	case <-time.After(20 * time.Second):
		t.Fatal("tap stream still open after Run returned")
	}
	if err := e.srv.Run(context.Background()); err == nil {
		t.Fatal("second Run did not fail")
	}
}
