package reactor

import (
	"testing"
	"time"

	"github.com/chronoshq/chronos"
)

// TestMaterializerWakesForNearJobsOnly: a created job wakes the
// materializer only when its first run is within the lookahead and one
// tick interval (the ticks materialize a later one in time); any other job
// change, and a created job whose next run the event does not carry (an
// older instance's notification, a paused cron job), still wakes it.
func TestMaterializerWakesForNearJobsOnly(t *testing.T) {
	t.Parallel()
	m := &materializer{r: &Reactor{cfg: Config{Lookahead: 2 * time.Second}}, interval: 500 * time.Millisecond}
	at := func(d time.Duration) *time.Time { t := time.Now().Add(d); return &t }
	cases := []struct {
		name string
		e    chronos.Event
		want bool
	}{
		{"created, due now", chronos.Event{Type: chronos.EventJobChanged, Op: "created", NextRunAt: at(0)}, true},
		{"created, overdue", chronos.Event{Type: chronos.EventJobChanged, Op: "created", NextRunAt: at(-time.Hour)}, true},
		{"created, within the lookahead", chronos.Event{Type: chronos.EventJobChanged, Op: "created", NextRunAt: at(time.Second)}, true},
		{"created, within the lookahead and a tick", chronos.Event{Type: chronos.EventJobChanged, Op: "created", NextRunAt: at(2300 * time.Millisecond)}, true},
		{"created, a minute away", chronos.Event{Type: chronos.EventJobChanged, Op: "created", NextRunAt: at(time.Minute)}, false},
		{"created, years away", chronos.Event{Type: chronos.EventJobChanged, Op: "created", NextRunAt: at(5 * 365 * 24 * time.Hour)}, false},
		{"created, no next run said", chronos.Event{Type: chronos.EventJobChanged, Op: "created"}, true},
		{"updated", chronos.Event{Type: chronos.EventJobChanged, Op: "updated", NextRunAt: at(time.Hour)}, true},
		{"deleted", chronos.Event{Type: chronos.EventJobChanged, Op: "deleted"}, true},
		{"a run changed", chronos.Event{Type: chronos.EventRunChanged, Count: 1}, false},
	}
	for _, c := range cases {
		if got := m.wakes(c.e); got != c.want {
			t.Errorf("%s: wakes = %v, want %v", c.name, got, c.want)
		}
	}
}
