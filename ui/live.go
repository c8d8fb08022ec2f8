package ui

import (
	"bufio"
	"encoding/json"
	"errors"
	nethttp "net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/chronoshq/chronos"
)

// eventTypes are the types the live page's filter offers, prefixes first.
var eventTypes = []string{"run.", "job.", "materializer.", "leader.", "listener.",
	string(chronos.EventRunChanged), string(chronos.EventAttempted), string(chronos.EventJobChanged),
	string(chronos.EventClaimed), string(chronos.EventMaterialized), string(chronos.EventSkipped),
	string(chronos.EventCaughtUp), string(chronos.EventReclaimed), string(chronos.EventPruned),
	string(chronos.EventLeaderChanged), string(chronos.EventLeaseLost), string(chronos.EventDropped)}

// Event stream tuning: the keep-alive comment interval, a stream's bus
// buffer (a slower browser loses events, counted, and never slows the
// bus), and the bound on one write.
const (
	streamHeartbeat    = 15 * time.Second
	streamBuffer       = 1024
	streamWriteTimeout = 30 * time.Second
	// MaxStreamsPerKey caps the console event streams one API key holds
	// open on one instance (the API's tap has its own cap): each is a bus
	// subscription with its own buffer.
	MaxStreamsPerKey = 16
)

// liveFilter is what the live page asked for: a job, and a type or a
// prefix of types ending in ".".
type liveFilter struct {
	JobID int64
	Type  string
}

func parseLiveFilter(q url.Values) liveFilter {
	f := liveFilter{}
	if id, err := strconv.ParseInt(strings.TrimSpace(q.Get("job_id")), 10, 64); err == nil && id > 0 {
		f.JobID = id
	}
	for _, t := range eventTypes {
		if q.Get("type") == t {
			f.Type = t
		}
	}
	return f
}

func (f liveFilter) match(e chronos.Event) bool {
	if f.JobID != 0 && e.JobID != f.JobID {
		return false
	}
	switch {
	case f.Type == "":
		return true
	case strings.HasSuffix(f.Type, "."):
		return strings.HasPrefix(string(e.Type), f.Type)
	}
	return string(e.Type) == f.Type
}

// jobID is the job filter as the form field and the query string hold
// it: "" for every job.
func (f liveFilter) jobID() string {
	if f.JobID == 0 {
		return ""
	}
	return strconv.FormatInt(f.JobID, 10)
}

func (f liveFilter) query() string {
	return setNonEmpty(url.Values{}, map[string]string{"job_id": f.jobID(), "type": f.Type}).Encode()
}

// livePage is GET /ui/live: the event tap in the browser (static/live.js
// reads the stream of c.events).
func (c *Console) livePage(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	f := parseLiveFilter(r.URL.Query())
	src := Prefix + "events"
	if q := f.query(); q != "" {
		src += "?" + q
	}
	c.render(w, r, s, nethttp.StatusOK, "live", "Live", map[string]any{"JobID": f.jobID(), "Type": f.Type, "Types": eventTypes, "Src": src})
}

// events is GET /ui/events: the event tap as Server-Sent Events for the
// signed-in browser (the API's /v1/events wants a bearer key, which an
// EventSource cannot send). Same frames as the API's tap.
func (c *Console) events(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	if !c.streams.Take(s.Name) {
		nethttp.Error(w, "too many console event streams open for this API key", nethttp.StatusTooManyRequests)
		return
	}
	defer c.streams.Give(s.Name)
	f := parseLiveFilter(r.URL.Query())
	sub := c.bus.Subscribe(streamBuffer, f.match)
	defer sub.Close()
	rc := nethttp.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(nethttp.StatusOK)
	bw := bufio.NewWriter(w)
	flush := func() error {
		if err := rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout)); err != nil && !errors.Is(err, nethttp.ErrNotSupported) {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		return rc.Flush()
	}
	write := func(e chronos.Event) {
		e.Time = e.Time.UTC()
		b, err := json.Marshal(e)
		if err != nil {
			return
		}
		bw.WriteString("event: " + string(e.Type) + "\ndata: ")
		bw.Write(b)
		bw.WriteString("\n\n")
	}
	bw.WriteString(": chronos console event stream\n\n")
	if flush() != nil {
		return
	}
	beat := time.NewTicker(streamHeartbeat)
	defer beat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-c.closing:
			return
		case <-beat.C:
			bw.WriteString(": heartbeat\n\n")
		case e, ok := <-sub.C():
			if !ok {
				return
			}
			if gap, ok := sub.TakeGap(c.cfg.Instance); ok {
				write(gap)
			}
			write(e)
		}
		if flush() != nil {
			return
		}
	}
}
