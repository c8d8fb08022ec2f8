package faults

import (
	"context"
	"sync"
	"time"
)

// tick calls f every interval until ctx ends (f's calls one after
// another, f given ctx).
func tick(ctx context.Context, interval time.Duration, f func(context.Context)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-t.C:
			f(ctx)
		}
	}
}

// every calls f rate times a second, each call in its own goroutine,
// until ctx ends, then waits for the calls in flight. A rate of 0 or less
// calls nothing and returns at once.
func every(ctx context.Context, rate int, f func(context.Context)) {
	if rate <= 0 {
		return
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	tick(ctx, time.Second/time.Duration(rate), func(ctx context.Context) { wg.Go(func() { f(ctx) }) })
}

// background calls body(ctx, 0), body(ctx, 1)... one after another in a
// goroutine of its own until the stop it returns is called; stop waits
// for the call in progress.
func background(ctx context.Context, body func(ctx context.Context, i int)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			body(ctx, i)
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}
