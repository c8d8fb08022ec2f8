package reactortest

import (
	"testing"
	"time"
)

// Eventually polls cond every 5ms until it holds, and fails the test,
// naming what it waited for, once d has passed without.
func Eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	EventuallyEvery(t, d, 5*time.Millisecond, what, cond)
}

// EventuallyEvery is Eventually polling every every: the leadership tests
// time hand-overs in milliseconds.
func EventuallyEvery(t testing.TB, d, every time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(every)
	}
}
