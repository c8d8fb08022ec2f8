package sql

import (
	"context"
	"sync"
	"time"

	"github.com/chronoshq/chronos"
)

// Coalescing of creates (POST /v1/jobs): concurrent CreateJob calls share
// one multi-row insert and one commit, so a burst of creates costs one WAL
// flush per batch instead of one per job.
//
// There is no linger and no goroutine of its own: a create that finds no
// batch in flight writes its batch at once (an idle create waits for
// nothing), and creates that arrive while a batch is being written queue
// up; when a writer's batch commits, it hands the queue to the first
// queued create, which writes it as the next batch.
//
// The batches are sized by load: one batch is in flight while fewer than
// createSecondAt creates queue, so the queue grows with the rate of
// creates and each statement carries more of them (a statement costs
// Postgres about a millisecond whatever its size, and two writers at any
// queue halved the batches on a loaded machine: 8 jobs a statement from
// 32 clients). A second writer starts once createSecondAt are queued, so
// that a burst that outruns one writer is not held behind it: on a quiet
// machine one writer at a time left the cores half idle, every create
// waiting for the batch before it (32 clients: 2,570 creates/s with a
// second writer only at a full batch of 128, 3,060 with one at 16).
const (
	createWriters  = 2                // batches in flight at most
	createMaxBatch = 128              // jobs per coalesced insert
	createSecondAt = 16               // creates queued that start a second writer
	createTimeout  = 10 * time.Second // per batch, whatever the callers' contexts
)

// createBatcher queues creates and elects their writers. Its zero value is
// ready to use.
type createBatcher struct {
	mu      sync.Mutex
	writing int              // batches in flight
	queue   []*pendingCreate // waiting for a writer
	batches int64            // written so far (tests read it)
}

// pendingCreate is one CreateJob waiting for its batch.
type pendingCreate struct {
	ctx  context.Context // the caller's, for its values (the actor)
	j    *chronos.Job
	err  error
	done chan struct{}         // closed when err is final
	lead chan []*pendingCreate // a batch this create is to write
}

// create stores j through a shared batch.
func (db *DB) createCoalesced(ctx context.Context, j *chronos.Job) error {
	b := &db.creates
	p := &pendingCreate{ctx: ctx, j: j, done: make(chan struct{}), lead: make(chan []*pendingCreate, 1)}
	b.mu.Lock()
	if b.writing == 0 {
		b.writing++
		b.mu.Unlock()
		db.writeCreates([]*pendingCreate{p})
		return p.err
	}
	b.queue = append(b.queue, p)
	if len(b.queue) >= createSecondAt && b.writing < createWriters {
		// A full batch waits: this create writes it, beside the other
		// writer.
		b.writing++
		n := min(len(b.queue), createMaxBatch)
		batch := b.queue[:n:n]
		b.queue = append([]*pendingCreate(nil), b.queue[n:]...)
		b.mu.Unlock()
		db.writeCreates(batch)
		return p.err
	}
	b.mu.Unlock()
	select {
	case <-p.done:
	case batch := <-p.lead:
		db.writeCreates(batch)
	}
	<-p.done
	return p.err
}

// writeCreates writes one batch, settles its creates, and hands what
// queued meanwhile to a new writer (or gives up its writer's slot: when
// nothing queued, or when less than a full batch did and the other writer
// will take it, so that two writers last only as long as the load needs
// them).
func (db *DB) writeCreates(batch []*pendingCreate) {
	db.insertCreates(batch)
	for _, p := range batch {
		close(p.done)
	}
	b := &db.creates
	b.mu.Lock()
	b.batches++
	if len(b.queue) == 0 || (b.writing > 1 && len(b.queue) < createSecondAt) {
		b.writing--
		b.mu.Unlock()
		return
	}
	n := min(len(b.queue), createMaxBatch)
	next := b.queue[:n:n]
	b.queue = append([]*pendingCreate(nil), b.queue[n:]...)
	b.mu.Unlock()
	next[0].lead <- next
}

// insertCreates stores a batch of validated jobs in one statement and sets
// each create's error: a taken name, or an error found against the
// database's clock, fails its own create only. Should the statement fail
// as a whole (a constraint the validation did not foresee), each job is
// retried alone so that only the culprit fails.
func (db *DB) insertCreates(batch []*pendingCreate) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(batch[0].ctx), createTimeout)
	defer cancel()
	now, err := db.now(ctx)
	if err != nil {
		for _, p := range batch {
			p.err = mapErr(err, "create job: read the clock")
		}
		return
	}
	prepared := make([]preparedJob, 0, len(batch))
	owners := make([]*pendingCreate, 0, len(batch))
	for _, p := range batch {
		row, err := prepareJob(p.ctx, p.j, now)
		if err != nil {
			p.err = err
			continue
		}
		prepared = append(prepared, preparedJob{j: p.j, row: row})
		owners = append(owners, p)
	}
	for i, dup := range distinctNames(prepared) {
		if dup {
			owners[i].err = nameTaken("create job")
		}
	}
	prepared, owners = keep(prepared, owners)
	errs, err := insertJobs(ctx, db.Pool, prepared)
	switch {
	case err != nil && len(prepared) > 1 && !Unavailable(err):
		for i, p := range prepared {
			one, err := insertJobs(ctx, db.Pool, []preparedJob{p})
			owners[i].err = firstErr(mapErr(err, "create job"), one)
		}
	case err != nil:
		for _, p := range owners {
			p.err = mapErr(err, "create job")
		}
	default:
		for i, p := range owners {
			p.err = errs[i]
		}
	}
	created := make([]*chronos.Job, 0, len(owners))
	for _, p := range owners {
		if p.err == nil {
			created = append(created, p.j)
		}
	}
	db.notifyCreated(ctx, created...)
}

// keep drops the jobs whose create has already failed.
func keep(prepared []preparedJob, owners []*pendingCreate) ([]preparedJob, []*pendingCreate) {
	n := 0
	for i, p := range owners {
		if p.err == nil {
			prepared[n], owners[n] = prepared[i], p
			n++
		}
	}
	return prepared[:n], owners[:n]
}

// firstErr is err, or else the first per-job error.
func firstErr(err error, errs []error) error {
	if err != nil {
		return err
	}
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
