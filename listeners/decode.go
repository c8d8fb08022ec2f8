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
// as a misleading event.
func decode(channel, payload string) (chronos.Event, error) {
	switch channel {
	case ChannelJobs:
		return decodeJobs(payload)
	case ChannelRuns:
		return decodeRuns(payload)
	case ChannelLeader:
		return decodeLeader(payload)
	}
	return chronos.Event{}, fmt.Errorf("decode: unknown channel %q", channel)
}

func decodeJobs(payload string) (chronos.Event, error) {
	var p jobsPayload
	if err := unmarshal(payload, &p); err != nil {
		return chronos.Event{}, fmt.Errorf("decode %s: %w", ChannelJobs, err)
	}
	switch p.Op {
	case "created", "updated", "deleted":
	default:
		return chronos.Event{}, fmt.Errorf("decode %s: unknown op %q", ChannelJobs, p.Op)
	}
	if p.JobID <= 0 {
		return chronos.Event{}, fmt.Errorf("decode %s: job_id %d is not a valid id", ChannelJobs, p.JobID)
	}
	e := chronos.Event{Type: chronos.EventJobChanged, Op: p.Op, JobID: p.JobID}
	if p.NextRunAt != nil {
		t, err := parseTime(*p.NextRunAt)
		if err != nil {
			return chronos.Event{}, fmt.Errorf("decode %s: next_run_at: %w", ChannelJobs, err)
		}
		e.NextRunAt = &t
	}
	return e, nil
}

func decodeRuns(payload string) (chronos.Event, error) {
	var p runsPayload
	if err := unmarshal(payload, &p); err != nil {
		return chronos.Event{}, fmt.Errorf("decode %s: %w", ChannelRuns, err)
	}
	if p.Count == nil {
		return chronos.Event{}, fmt.Errorf("decode %s: count missing", ChannelRuns)
	}
	if *p.Count < 0 {
		return chronos.Event{}, fmt.Errorf("decode %s: negative count %d", ChannelRuns, *p.Count)
	}
	e := chronos.Event{Type: chronos.EventRunChanged, Count: *p.Count}
	if p.RunID != nil {
		if *p.RunID <= 0 {
			return chronos.Event{}, fmt.Errorf("decode %s: run_id %d is not a valid id", ChannelRuns, *p.RunID)
		}
		e.RunID = *p.RunID
	}
	if p.JobID != nil {
		if *p.JobID <= 0 {
			return chronos.Event{}, fmt.Errorf("decode %s: job_id %d is not a valid id", ChannelRuns, *p.JobID)
		}
		e.JobID = *p.JobID
	}
	if p.Status != nil {
		s := chronos.RunStatus(*p.Status)
		if !s.Valid() {
			return chronos.Event{}, fmt.Errorf("decode %s: unknown status %q", ChannelRuns, *p.Status)
		}
		e.Status = s
	}
	if p.AvailableAt != nil {
		t, err := parseTime(*p.AvailableAt)
		if err != nil {
			return chronos.Event{}, fmt.Errorf("decode %s: available_at: %w", ChannelRuns, err)
		}
		e.AvailableAt = &t
	}
	return e, nil
}

func decodeLeader(payload string) (chronos.Event, error) {
	var p leaderPayload
	if err := unmarshal(payload, &p); err != nil {
		return chronos.Event{}, fmt.Errorf("decode %s: %w", ChannelLeader, err)
	}
	if p.Op != "resigned" {
		return chronos.Event{}, fmt.Errorf("decode %s: unknown op %q", ChannelLeader, p.Op)
	}
	if p.Instance == "" {
		return chronos.Event{}, fmt.Errorf("decode %s: instance missing", ChannelLeader)
	}
	return chronos.Event{Type: chronos.EventLeaderChanged, Op: p.Op, Instance: p.Instance}, nil
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
