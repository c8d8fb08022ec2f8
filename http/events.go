package http

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	nethttp "net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/chronoshq/chronos"
)

// knownEventTypes are the exact types ?type= accepts; a value ending in
// "." is a prefix ("run." matches run.changed, run.attempted, ...).
var knownEventTypes = map[chronos.EventType]bool{
	chronos.EventJobChanged: true, chronos.EventRunChanged: true, chronos.EventResync: true,
	chronos.EventListenerDown: true, chronos.EventLeaderChanged: true, chronos.EventClaimed: true,
	chronos.EventAttempted: true, chronos.EventLeaseLost: true, chronos.EventMaterialized: true,
	chronos.EventSkipped: true, chronos.EventReclaimed: true, chronos.EventPruned: true,
	chronos.EventDropped: true, chronos.EventCaughtUp: true,
}

// tapWriteTimeout bounds one write to an event-tap client: a client that
// stops reading is cut off instead of pinning a goroutine forever.
const tapWriteTimeout = 30 * time.Second

// tapFilter is what one tap client asked for.
type tapFilter struct {
	jobs     map[int64]bool
	exact    map[chronos.EventType]bool
	prefixes []string
}

func (f *tapFilter) match(e chronos.Event) bool {
	if f.jobs != nil && !f.jobs[e.JobID] {
		return false
	}
	if f.exact == nil && f.prefixes == nil {
		return true
	}
	if f.exact[e.Type] {
		return true
	}
	for _, p := range f.prefixes {
		if strings.HasPrefix(string(e.Type), p) {
			return true
		}
	}
	return false
}

// parseTapFilter reads ?job_id= and ?type=, each a comma-separated list.
func parseTapFilter(c *gin.Context) (*tapFilter, error) {
	q, err := parseQuery(c, "job_id", "type")
	if err != nil {
		return nil, err
	}
	f := &tapFilter{}
	if v, ok := q["job_id"]; ok {
		f.jobs = map[int64]bool{}
		for _, p := range strings.Split(v, ",") {
			id, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
			if err != nil || id < 1 {
				return nil, invalid("job_id", "must be a comma-separated list of positive integers")
			}
			f.jobs[id] = true
		}
	}
	if v, ok := q["type"]; ok {
		f.exact = map[chronos.EventType]bool{}
		for _, p := range strings.Split(v, ",") {
			p = strings.TrimSpace(p)
			switch {
			case p == "":
				return nil, invalid("type", "must be a comma-separated list of event types or prefixes ending in \".\"")
			case strings.HasSuffix(p, "."):
				f.prefixes = append(f.prefixes, p)
			case knownEventTypes[chronos.EventType(p)]:
				f.exact[chronos.EventType(p)] = true
			default:
				return nil, invalid("type", fmt.Sprintf("unknown event type %q (a prefix must end in \".\", e.g. \"run.\")", fieldName(p)))
			}
		}
	}
	return f, nil
}

// events is GET /v1/events, the event tap: Server-Sent Events of the bus,
// "event: <type>" and "data: <json>" per event, a comment line as a
// heartbeat, and a bus.dropped event with the count of events a slow
// client missed. It never slows the bus: the subscription is bounded and
// overflow is counted, not waited for.
func (s *Server) events(c *gin.Context) {
	f, err := parseTapFilter(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	ctx := c.Request.Context()
	sub := s.bus.Subscribe(s.tapBuffer, f.match)
	defer sub.Close()

	rc := nethttp.NewResponseController(c.Writer)
	h := c.Writer.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	c.Status(nethttp.StatusOK)
	w := bufio.NewWriter(c.Writer)

	// flush pushes what is buffered to the client under a write deadline.
	flush := func() error {
		if err := rc.SetWriteDeadline(time.Now().Add(tapWriteTimeout)); err != nil && !errors.Is(err, nethttp.ErrNotSupported) {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
		if err := rc.Flush(); err != nil && !errors.Is(err, nethttp.ErrNotSupported) {
			return err
		}
		return nil
	}
	// The opening comment tells the client the subscription is live.
	fmt.Fprintf(w, ": chronos event tap, instance %s\n\n", s.cfg.Instance)
	if err := flush(); err != nil {
		return
	}
	heartbeat := time.NewTicker(s.heartbeat)
	defer heartbeat.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.closing:
			return
		case <-heartbeat.C:
			if gap, ok := sub.TakeGap(s.cfg.Instance); ok {
				writeEvent(w, gap)
			}
			fmt.Fprintf(w, ": heartbeat %s\n\n", time.Now().UTC().Format(time.RFC3339))
		case e, ok := <-sub.C():
			if !ok {
				return
			}
			// Report a gap before the event after it, so the client
			// knows exactly where it lost events.
			if gap, ok := sub.TakeGap(s.cfg.Instance); ok {
				writeEvent(w, gap)
			}
			writeEvent(w, e)
			// Drain what is already queued before flushing: one flush
			// per burst, not per event.
			for more := true; more && w.Buffered() < 32<<10; {
				select {
				case e, ok := <-sub.C():
					if !ok {
						return
					}
					writeEvent(w, e)
				default:
					more = false
				}
			}
		}
		if err := flush(); err != nil {
			s.log.Debug("event tap client gone", slog.String("request_id", requestIDOf(c)), slog.String("error", err.Error()))
			return
		}
	}
}

// writeEvent writes one SSE event. The JSON of an Event has no newlines,
// so one data line carries it.
func writeEvent(w *bufio.Writer, e chronos.Event) {
	e.Time = e.Time.UTC()
	b, err := json.Marshal(e)
	if err != nil {
		// An Event is plain data; this cannot happen, but never write a
		// broken frame.
		return
	}
	w.WriteString("event: ")
	w.WriteString(string(e.Type))
	w.WriteString("\ndata: ")
	w.Write(b)
	w.WriteString("\n\n")
}
