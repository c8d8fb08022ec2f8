package reactor

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/bus"
	"github.com/chronoshq/chronos/sql"
)

// Batching of completions.
const (
	completeMaxBatch = 256                    // outcomes per db.Complete
	completeLinger   = 5 * time.Millisecond   // extra wait for more outcomes, only under load
	completeTimeout  = 10 * time.Second       // per db.Complete call
	completeRetryFor = 20 * time.Second       // how long a failing batch is retried
	completeBackoff  = 100 * time.Millisecond // first pause between retries
	// completeWriters batches may be in flight at once. One: while it
	// waits for its statement and commit, the next batch collects what
	// arrives, so batches grow with the load (the wait for a WAL flush,
	// under REACTOR_SYNCHRONOUS_COMMIT=on, included). Two writers, as
	// before session 17, updated neighbouring rows of job_runs at once and
	// each wrote half the batch: in a 20,000-run burst the completion cost
	// Postgres 75 µs a run at 22 outcomes a statement, against 37 µs at 88
	// with one, and the burst went ~15 % faster (docs/performance.md).
	completeWriters = 1
)

// completion is one outcome on its way to the database, with what the
// EventAttempted published after it needs.
type completion struct {
	out  sql.Outcome
	run  *chronos.Run
	done func() // called once the outcome is recorded or given up; may be nil
}

// completer records outcomes in batches: one db.Complete (one round trip)
// for as many outcomes as have queued up. A lone outcome is written at once;
// under load the outcomes that arrive while a batch is being written, plus
// those arriving within completeLinger, form the next batch. This keeps
// NOTIFY-serialised commits few without delaying a record under load by
// more than a few milliseconds.
//
// The linger was a millisecond until the prefetch queue (prefetch.go)
// made workers start calls one by one instead of a claim's worth at once:
// against a target that takes 50 ms, outcomes then came in a steady trickle
// and a millisecond's batches held eight of them, twice the completions
// (2,361 statements for 20,000 runs against 1,218). With 5 ms it is 1,255.
type completer struct {
	db       *sql.DB
	bus      *bus.Bus
	log      *slog.Logger
	instance string
	in       chan completion
	// retried is called with the available_at of a run put back to
	// pending for a retry, so the local dispatcher arms its timer.
	retried func(time.Time)
	// clock is the instance's own clock, which the dispatcher's timers
	// run on.
	clock func() time.Time
}

func newCompleter(db *sql.DB, b *bus.Bus, log *slog.Logger, instance string, buffer int, retried func(time.Time)) *completer {
	return &completer{db: db, bus: b, log: log, instance: instance, in: make(chan completion, buffer),
		retried: retried, clock: time.Now}
}

// submit queues an outcome. It blocks only when the queue is full, which is
// back-pressure from a slow database.
func (c *completer) submit(x completion) { c.in <- x }

// run writes batches with completeWriters goroutines until in is closed
// and drained. It does not watch a context: closing in is how the reactor
// says every worker is done, and every queued outcome must still be
// written. Outcomes of different runs are independent, so the batches may
// commit in any order.
func (c *completer) run() {
	var wg sync.WaitGroup
	for range completeWriters {
		wg.Go(c.writer)
	}
	wg.Wait()
}

// writer is one of run's goroutines.
func (c *completer) writer() {
	batch := make([]completion, 0, completeMaxBatch)
	for {
		x, ok := <-c.in
		if !ok {
			return
		}
		batch = append(batch[:0], x)
		open := fillBatch(c.in, &batch, completeMaxBatch, completeLinger)
		c.write(batch)
		if !open {
			return
		}
	}
}

// write records one batch, retrying a failing database for a while, and
// publishes what happened to each outcome.
func (c *completer) write(batch []completion) {
	defer func() {
		for _, x := range batch {
			if x.done != nil {
				x.done()
			}
		}
	}()
	outs := make([]sql.Outcome, len(batch))
	for i, x := range batch {
		outs[i] = x.out
	}
	var (
		results []sql.CompleteResult
		err     error
	)
	deadline := time.Now().Add(completeRetryFor)
	pause := completeBackoff
	for {
		ctx, cancel := context.WithTimeout(context.Background(), completeTimeout)
		results, err = c.db.Complete(ctx, outs)
		cancel()
		if err == nil && len(results) != len(outs) {
			err = errors.New("complete returned a result count that does not match")
		}
		if err == nil || time.Now().Add(pause).After(deadline) {
			break
		}
		c.log.Warn("complete runs failed, retrying", "err", err, "outcomes", len(outs), "pause", pause)
		time.Sleep(pause)
		pause = min(2*pause, 2*time.Second)
	}
	if err != nil {
		// The runs stay leased; their leases expire and the reaper takes
		// them back. Nothing else can be done without a database.
		c.log.Error("complete runs failed, giving the runs up to the reaper", "err", err, "outcomes", len(outs))
		return
	}
	// The retries' available_at is now()+delay as of the statement, which
	// ran before this moment: a timer armed from here never fires early.
	done := c.clock()
	for i, x := range batch {
		r := results[i]
		if r.Err != nil {
			leaseLost(c.log, c.bus, c.instance, x.out.Lease, x.run.JobID, "complete", r.Err)
			continue
		}
		if r.Status == chronos.StatusPending && c.retried != nil {
			c.retried(done.Add(x.out.RetryDelay))
		}
		c.bus.Publish(attemptedEvent(c.instance, x, r.Status))
	}
}

// attemptedEvent describes a recorded attempt for the bus.
func attemptedEvent(instance string, x completion, status chronos.RunStatus) chronos.Event {
	o := x.out
	// The event's instants share one allocation.
	at := new([3]time.Time)
	at[0] = o.StartedAt.UTC()
	e := chronos.Event{
		Type:       chronos.EventAttempted,
		Instance:   instance,
		RunID:      o.RunID,
		JobID:      x.run.JobID,
		Attempt:    o.Attempt,
		Status:     status,
		StatusCode: o.StatusCode,
		Error:      o.Error,
		DurationMS: float64(o.FinishedAt.Sub(o.StartedAt)) / float64(time.Millisecond),
		Trigger:    x.run.Trigger,
		StartedAt:  &at[0],
	}
	if !x.run.ScheduledAt.IsZero() {
		at[1] = x.run.ScheduledAt.UTC()
		e.ScheduledAt = &at[1]
	}
	if !x.run.CreatedAt.IsZero() {
		at[2] = x.run.CreatedAt.UTC()
		e.CreatedAt = &at[2]
	}
	return e
}

// leaseLost logs and publishes a fenced write that was rejected: the run
// was reclaimed and this worker's attempt no longer counts.
func leaseLost(log *slog.Logger, b *bus.Bus, instance string, l sql.Lease, jobID int64, op string, err error) {
	log.Warn("lease lost: fenced write rejected", "op", op, "run_id", l.RunID, "job_id", jobID, "attempt", l.Attempt, "err", err)
	b.Publish(chronos.Event{
		Type: chronos.EventLeaseLost, Instance: instance, RunID: l.RunID, JobID: jobID,
		Attempt: l.Attempt, Op: op, Error: err.Error(),
	})
}
