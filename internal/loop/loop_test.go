package loop_test

import (
	"context"
	"testing"
	"time"

	"github.com/chronoshq/chronos/internal/loop"
)

// TestEvery: the first pass runs at once, a wake runs the next one
// without waiting for the interval (an hour here), and Every returns once
// ctx ends.
func TestEvery(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	wake := make(chan struct{})
	passes := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		loop.Every(ctx, time.Hour, wake, func() { passes <- struct{}{} })
	}()
	<-passes // at once
	wake <- struct{}{}
	<-passes // woken
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Every did not return after its context ended")
	}
}
