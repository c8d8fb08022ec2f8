package reactortest

import (
	"cmp"
	"time"
)

// Timings returns a test reactor's idle poll interval, leader poll
// interval and shutdown timeout: each as given, or when zero, 200ms, 100ms
// and 2s. Tests that wait on a poll rather than an event then finish
// quickly, and a stuck shutdown shows within the test. Every test that
// builds a reactor (reactor.New) sets its Config's three fields with it.
func Timings(idlePoll, leaderPoll, shutdown time.Duration) (time.Duration, time.Duration, time.Duration) {
	return cmp.Or(idlePoll, 200*time.Millisecond), cmp.Or(leaderPoll, 100*time.Millisecond), cmp.Or(shutdown, 2*time.Second)
}
