package listeners

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chronoshq/chronos"
)

// The NOTIFY channels the listener subscribes to (payloads in sql/doc.go).
const (
	ChannelJobs   = "chronos_jobs"
	ChannelRuns   = "chronos_runs"
	ChannelLeader = "chronos_leader"
)

// Channels is every channel the listener LISTENs on.
var Channels = []string{ChannelJobs, ChannelRuns, ChannelLeader}

// jobsPayload is chronos_jobs: {"op":"created|updated|deleted","job_id":N,
// "next_run_at":"ts"?}; next_run_at only on "created", when the job has one.
type jobsPayload struct {
	Op        string  `json:"op"`
	JobID     int64   `json:"job_id"`
	NextRunAt *string `json:"next_run_at"`
}

// runsPayload is chronos_runs: {"count":N,"run_id":N?,"job_id":N?,
// "status":"s"?,"available_at":"ts"?}. Pointers tell absent from zero.
type runsPayload struct {
	Count       *int    `json:"count"`
	RunID       *int64  `json:"run_id"`
	JobID       *int64  `json:"job_id"`
	Status      *string `json:"status"`
	AvailableAt *string `json:"available_at"`
}

// leaderPayload is chronos_leader: {"op":"resigned","instance":"id"}.
type leaderPayload struct {
	Op       string `json:"op"`
	Instance string `json:"instance"`
}

// timeLayouts are the forms a timestamptz may take in a payload: to_json()
// gives RFC 3339 with a "+00:00" offset; a ::text cast gives Postgres's own
// style, accepted too so a trigger written either way decodes.
var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999Z07",
	"2006-01-02T15:04:05.999999999Z07",
}

// decode turns one notification into the bus event it stands for. It is
// pure and total: any payload, however malformed, yields either an event or
// an error, never a panic. Unknown JSON fields are ignored so a newer
// trigger does not break an older listener; missing or invalid required
// fields are errors, so a garbled notice is logged rather than published
// as a misleading event. Each error names the channel.
func decode(channel, payload string) (chronos.Event, error) {
	var (
		e   chronos.Event
		err error
	)
	switch channel {
	case ChannelJobs:
		e, err = decodeAs(payload, jobsEvent)
	case ChannelRuns:
		e, err = decodeAs(payload, runsEvent)
	case ChannelLeader:
		e, err = decodeAs(payload, leaderEvent)
	default:
		return chronos.Event{}, fmt.Errorf("decode: unknown channel %q", channel)
	}
	if err != nil {
		return chronos.Event{}, fmt.Errorf("decode %s: %w", channel, err)
	}
	return e, nil
}

// decodeAs unmarshals payload into a P and makes its event of it (an
// event with an error is dropped by decode).
func decodeAs[P any](payload string, event func(*P) (chronos.Event, error)) (chronos.Event, error) {
	var p P
	if err := unmarshal(payload, &p); err != nil {
		return chronos.Event{}, err
	}
	return event(&p)
}

func jobsEvent(p *jobsPayload) (chronos.Event, error) {
	switch p.Op {
	case "created", "updated", "deleted":
	default:
		return chronos.Event{}, fmt.Errorf("unknown op %q", p.Op)
	}
	e := chronos.Event{Type: chronos.EventJobChanged, Op: p.Op}
	if err := validID("job_id", &p.JobID, &e.JobID); err != nil {
		return chronos.Event{}, err
	}
	var err error
	e.NextRunAt, err = optTime("next_run_at", p.NextRunAt)
	return e, err
}

func runsEvent(p *runsPayload) (chronos.Event, error) {
	if p.Count == nil {
		return chronos.Event{}, errors.New("count missing")
	}
	if *p.Count < 0 {
		return chronos.Event{}, fmt.Errorf("negative count %d", *p.Count)
	}
	e := chronos.Event{Type: chronos.EventRunChanged, Count: *p.Count}
	if err := validID("run_id", p.RunID, &e.RunID); err != nil {
		return chronos.Event{}, err
	}
	if err := validID("job_id", p.JobID, &e.JobID); err != nil {
		return chronos.Event{}, err
	}
	if p.Status != nil {
		s := chronos.RunStatus(*p.Status)
		if !s.Valid() {
			return chronos.Event{}, fmt.Errorf("unknown status %q", *p.Status)
		}
		e.Status = s
	}
	var err error
	e.AvailableAt, err = optTime("available_at", p.AvailableAt)
	return e, err
}

func leaderEvent(p *leaderPayload) (chronos.Event, error) {
	if p.Op != "resigned" {
		return chronos.Event{}, fmt.Errorf("unknown op %q", p.Op)
	}
	if p.Instance == "" {
		return chronos.Event{}, errors.New("instance missing")
	}
	return chronos.Event{Type: chronos.EventLeaderChanged, Op: p.Op, Instance: p.Instance}, nil
}

// validID sets *to to *id, the payload's field, when the payload has it
// (id not nil); an id that is not positive is an error.
func validID(field string, id, to *int64) error {
	if id == nil {
		return nil
	}
	if *id <= 0 {
		return fmt.Errorf("%s %d is not a valid id", field, *id)
	}
	*to = *id
	return nil
}

// optTime parses s, the payload's field, when the payload has it (nil:
// none, and no error).
func optTime(field string, s *string) (*time.Time, error) {
	if s == nil {
		return nil, nil
	}
	t, err := parseTime(*s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	return &t, nil
}

// unmarshal decodes a JSON object. "null" and non-objects are rejected:
// json.Unmarshal would accept null into a struct and leave it zero.
func unmarshal(payload string, v any) error {
	if t := strings.TrimLeft(payload, " \t\r\n"); t == "" || t[0] != '{' {
		return errors.New("payload is not a JSON object")
	}
	if err := json.Unmarshal([]byte(payload), v); err != nil {
		return fmt.Errorf("payload: %w", err)
	}
	return nil
}

func parseTime(s string) (time.Time, error) {
	for _, layout := range timeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("unrecognised timestamp %q", s)
}
