package listeners

import (
	"testing"
	"time"

	"github.com/chronoshq/chronos"
)

func TestDecode(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 8, 7, 30, 0, 123456000, time.UTC)
	cases := []struct {
		name, channel, payload string
		want                   chronos.Event
		wantErr                bool
	}{
		{name: "job created", channel: ChannelJobs, payload: `{"op":"created","job_id":42}`,
			want: chronos.Event{Type: chronos.EventJobChanged, Op: "created", JobID: 42}},
		{name: "job created with its next run", channel: ChannelJobs,
			payload: `{"op":"created","job_id":42,"next_run_at":"2026-03-08T07:30:00.123456Z"}`,
			want:    chronos.Event{Type: chronos.EventJobChanged, Op: "created", JobID: 42, NextRunAt: &at}},
		{name: "job created, bad next run", channel: ChannelJobs, payload: `{"op":"created","job_id":42,"next_run_at":"soon"}`, wantErr: true},
		{name: "job deleted", channel: ChannelJobs, payload: `{"op":"deleted","job_id":7,"extra":true}`,
			want: chronos.Event{Type: chronos.EventJobChanged, Op: "deleted", JobID: 7}},
		{name: "job unknown op", channel: ChannelJobs, payload: `{"op":"exploded","job_id":7}`, wantErr: true},
		{name: "job no id", channel: ChannelJobs, payload: `{"op":"updated"}`, wantErr: true},
		{name: "job id as string", channel: ChannelJobs, payload: `{"op":"updated","job_id":"7"}`, wantErr: true},
		{name: "run single", channel: ChannelRuns,
			payload: `{"count":1,"run_id":9,"job_id":42,"status":"pending","available_at":"2026-03-08T07:30:00.123456+00:00"}`,
			want: chronos.Event{Type: chronos.EventRunChanged, Count: 1, RunID: 9, JobID: 42,
				Status: chronos.StatusPending, AvailableAt: &at}},
		{name: "run batch", channel: ChannelRuns, payload: `{"count":500,"available_at":"2026-03-08 08:30:00.123456+01"}`,
			want: chronos.Event{Type: chronos.EventRunChanged, Count: 500, AvailableAt: &at}},
		{name: "run nulls", channel: ChannelRuns, payload: `{"count":3,"run_id":null,"job_id":null,"status":null,"available_at":null}`,
			want: chronos.Event{Type: chronos.EventRunChanged, Count: 3}},
		{name: "run succeeded", channel: ChannelRuns, payload: `{"count":2,"job_id":5,"status":"succeeded"}`,
			want: chronos.Event{Type: chronos.EventRunChanged, Count: 2, JobID: 5, Status: chronos.StatusSucceeded}},
		{name: "run no count", channel: ChannelRuns, payload: `{"run_id":1}`, wantErr: true},
		{name: "run bad status", channel: ChannelRuns, payload: `{"count":1,"status":"exploded"}`, wantErr: true},
		{name: "run bad time", channel: ChannelRuns, payload: `{"count":1,"available_at":"yesterday"}`, wantErr: true},
		{name: "run negative count", channel: ChannelRuns, payload: `{"count":-1}`, wantErr: true},
		{name: "run zero id", channel: ChannelRuns, payload: `{"count":1,"run_id":0}`, wantErr: true},
		{name: "leader resigned", channel: ChannelLeader, payload: `{"op":"resigned","instance":"a-1"}`,
			want: chronos.Event{Type: chronos.EventLeaderChanged, Op: "resigned", Instance: "a-1"}},
		{name: "leader no instance", channel: ChannelLeader, payload: `{"op":"resigned"}`, wantErr: true},
		{name: "leader other op", channel: ChannelLeader, payload: `{"op":"elected","instance":"a"}`, wantErr: true},
		{name: "unknown channel", channel: "other", payload: `{}`, wantErr: true},
		{name: "null", channel: ChannelRuns, payload: `null`, wantErr: true},
		{name: "empty", channel: ChannelJobs, payload: ``, wantErr: true},
		{name: "array", channel: ChannelJobs, payload: `[1]`, wantErr: true},
		{name: "truncated", channel: ChannelJobs, payload: `{"op":"created","job_id":4`, wantErr: true},
		{name: "trailing garbage", channel: ChannelJobs, payload: `{"op":"created","job_id":4}x`, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := decode(c.channel, c.payload)
			if c.wantErr {
				if err == nil {
					t.Fatalf("decode(%q, %q) = %+v, want an error", c.channel, c.payload, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("decode(%q, %q): %v", c.channel, c.payload, err)
			}
			if !sameEvent(got, c.want) {
				t.Fatalf("decode(%q, %q) = %+v, want %+v", c.channel, c.payload, got, c.want)
			}
		})
	}
}

func sameEvent(a, b chronos.Event) bool {
	if !sameTime(a.AvailableAt, b.AvailableAt) || !sameTime(a.NextRunAt, b.NextRunAt) {
		return false
	}
	a.AvailableAt, b.AvailableAt, a.NextRunAt, b.NextRunAt = nil, nil, nil, nil
	return a == b
}

func sameTime(a, b *time.Time) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Equal(*b))
}

// FuzzDecode checks that decode never panics and that whatever it accepts
// is a well-formed event of the channel's type. The seeds run as a regular
// test with every `go test`.
func FuzzDecode(f *testing.F) {
	seeds := []struct{ channel, payload string }{
		{ChannelJobs, `{"op":"created","job_id":1}`},
		{ChannelJobs, `{"op":"created","job_id":1,"next_run_at":"2026-03-08T07:30:00.123456Z"}`},
		{ChannelJobs, `{"op":"deleted","job_id":9223372036854775807}`},
		{ChannelJobs, `{"op":"updated","job_id":1e3}`},
		{ChannelRuns, `{"count":1,"run_id":9,"job_id":42,"status":"pending","available_at":"2026-03-08T07:30:00.123456+00:00"}`},
		{ChannelRuns, `{"count":500,"available_at":"2026-03-08 08:30:00+01"}`},
		{ChannelRuns, `{"count":99999999999999999999}`},
		{ChannelRuns, `{"count":1,"available_at":"0000-01-01T00:00:00Z"}`},
		{ChannelLeader, `{"op":"resigned","instance":"x"}`},
		{ChannelLeader, `{"op":"resigned","instance":"\u0000"}`},
		{ChannelRuns, `null`},
		{ChannelRuns, ``},
		{ChannelJobs, `{"op":`},
		{ChannelJobs, "\xff\xfe"},
		{"", `{}`},
	}
	for _, s := range seeds {
		f.Add(s.channel, s.payload)
	}
	f.Fuzz(func(t *testing.T, channel, payload string) {
		e, err := decode(channel, payload)
		if err != nil {
			if e != (chronos.Event{}) {
				t.Fatalf("decode returned an error and a non-zero event %+v", e)
			}
			return
		}
		switch channel {
		case ChannelJobs:
			if e.Type != chronos.EventJobChanged || e.JobID <= 0 || e.Op == "" {
				t.Fatalf("bad job event %+v", e)
			}
		case ChannelRuns:
			if e.Type != chronos.EventRunChanged || e.Count < 0 || e.RunID < 0 || e.JobID < 0 ||
				(e.Status != "" && !e.Status.Valid()) {
				t.Fatalf("bad run event %+v", e)
			}
			if e.AvailableAt != nil && e.AvailableAt.Location() != time.UTC {
				t.Fatalf("available_at not in UTC: %v", e.AvailableAt)
			}
		case ChannelLeader:
			if e.Type != chronos.EventLeaderChanged || e.Op != "resigned" || e.Instance == "" {
				t.Fatalf("bad leader event %+v", e)
			}
		default:
			t.Fatalf("accepted unknown channel %q: %+v", channel, e)
		}
	})
}
