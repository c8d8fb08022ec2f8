// Package testwait waits, in a test, for a goroutine's result: a Run that
// must return nil once its context ends, a migration or a write that must
// finish once what blocked it is gone.
package testwait

import (
	"testing"
	"time"
)

// Nil fails t unless done yields nil within d. what names the call and
// what should have ended it, for the failure message ("Run after cancel").
func Nil(t testing.TB, done <-chan error, d time.Duration, what string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v, want nil", what, err)
		}
	case <-time.After(d):
		t.Fatalf("%s: did not return within %v", what, d)
	}
}
