package reactor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/chronoshq/chronos/sql"
)

// Batching of starts.
const (
	startMaxBatch = 500 // leases one StartMany writes at most
	// startLinger is how long a batch that found company waits for more:
	// a start is not urgent (its call is already on its way), so a few
	// milliseconds buy a larger batch under load and cost nothing when
	// starts come one at a time.
	startLinger = 5 * time.Millisecond
)

// errStarterClosed is the answer to a start asked for after the reactor
// stopped writing them: never, while a worker is running, but a delivery
// cut short by a panic leaves its timer behind.
var errStarterClosed = errors.New("start run: the reactor is shutting down")

// starter writes the starts of deliveries still in flight after
// startRecordDelay (see deliver), in batches: whatever workers asked for
// while the last batch was being written goes into the next one, one
// statement and one commit for all of them.
//
// A start each, as it was, is what slow targets made expensive: against a
// target that answers in 50 ms every delivery is started, and 100 workers'
// starts were 100 statements a round competing for a handful of pooled
// connections with the claims and completions (see docs/performance.md,
// session 22).
//
// Like the completer, it does not watch a context: it writes until close
// is called, after every worker is done, and every start asked for by
// then is written and answered.
type starter struct {
	// startMany is the write, (*sql.DB).StartMany; tests replace it.
	startMany func(ctx context.Context, leases []sql.Lease) (map[int64]bool, error)

	mu     sync.RWMutex // held shared to send on in, exclusively to close it
	closed bool
	in     chan startRequest
}

// startRequest is one worker's start, and where its answer goes.
type startRequest struct {
	lease sql.Lease
	done  chan error
}

func newStarter(db *sql.DB, buffer int) *starter {
	return &starter{startMany: db.StartMany, in: make(chan startRequest, buffer)}
}

// start records l's start and returns once it is written: nil, an error
// wrapping sql.ErrLeaseLost when the lease is gone, or the write's error.
func (s *starter) start(l sql.Lease) error {
	req := startRequest{lease: l, done: make(chan error, 1)}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return errStarterClosed
	}
	s.in <- req
	s.mu.RUnlock()
	return <-req.done
}

// close ends run once what was asked for is written.
func (s *starter) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.in)
	}
}

// run writes batches until close.
func (s *starter) run() {
	batch := make([]startRequest, 0, startMaxBatch)
	for x := range s.in {
		batch = append(batch[:0], x)
		fillBatch(s.in, &batch, startMaxBatch, startLinger)
		s.write(batch)
	}
}

// write writes one batch and answers each of its workers.
func (s *starter) write(batch []startRequest) {
	leases := make([]sql.Lease, len(batch))
	for i, x := range batch {
		leases[i] = x.lease
	}
	// A context of its own, like every worker write: it records runs'
	// starts, and a shutdown must not cut it off half way.
	ctx, cancel := context.WithTimeout(context.Background(), dbWriteTimeout)
	started, err := s.startMany(ctx, leases)
	cancel()
	for _, x := range batch {
		switch {
		case err != nil:
			x.done <- err
		case !started[x.lease.RunID]:
			x.done <- fmt.Errorf("start run %d attempt %d: %w", x.lease.RunID, x.lease.Attempt, sql.ErrLeaseLost)
		default:
			x.done <- nil
		}
	}
}
