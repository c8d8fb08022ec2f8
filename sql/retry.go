package sql

import (
	"context"
	"math/rand/v2"
	"time"
)

// txAttempts is how many times an API write (UpdateJob, DeleteJob) runs
// its transaction when Postgres aborts it for a deadlock or a
// serialization failure.
const txAttempts = 4

// retryableTx tells a deadlock (40P01) or a serialization failure (40001):
// the transaction was rolled back, through no fault of the request, and
// running it again is safe.
func retryableTx(err error) bool {
	c := pgCode(err)
	return c == "40P01" || c == "40001"
}

// retryTx runs one attempt of a write transaction, f, and again (after a
// short, jittered pause) while it fails with a deadlock or a serialization
// failure, txAttempts times at most. The writers' lock order (see
// UpdateJob and DeleteJob) should make a deadlock impossible; this is the
// safety net that keeps one that still happens (a lock order not thought
// of, a hand-run transaction) from becoming an HTTP 500.
func retryTx[T any](ctx context.Context, f func() (T, error)) (T, error) {
	for attempt := 1; ; attempt++ {
		v, err := f()
		if err == nil || !retryableTx(err) || attempt >= txAttempts {
			return v, err
		}
		pause := time.Duration(attempt)*10*time.Millisecond + rand.N(10*time.Millisecond)
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, err
		case <-t.C:
		}
	}
}
