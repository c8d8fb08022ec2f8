package reactor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/reactor/reactortest"
	"github.com/chronoshq/chronos/sql"
)

// fakeStarts records the batches a starter writes; the first write waits
// for hold to close, so that starts pile up behind it.
type fakeStarts struct {
	hold    chan struct{}
	lost    int64 // this run's lease is gone
	mu      sync.Mutex
	batches [][]sql.Lease
}

func (f *fakeStarts) startMany(_ context.Context, leases []sql.Lease) (map[int64]bool, error) {
	f.mu.Lock()
	first := len(f.batches) == 0
	f.batches = append(f.batches, leases)
	f.mu.Unlock()
	if first {
		<-f.hold
	}
	started := map[int64]bool{}
	for _, l := range leases {
		if l.RunID != f.lost {
			started[l.RunID] = true
		}
	}
	return started, nil
}

func (f *fakeStarts) sizes() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var n []int
	for _, b := range f.batches {
		n = append(n, len(b))
	}
	return n
}

// Starts asked for while one is being written go out together in the next
// statement, and each worker hears about its own run: started, or its
// lease lost.
func TestStarterBatchesWhatPilesUp(t *testing.T) {
	t.Parallel()
	f := &fakeStarts{hold: make(chan struct{}), lost: 7}
	s := newStarter(nil, 64)
	s.startMany = f.startMany
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.run()
	}()

	results := make(map[int64]chan error)
	ask := func(id int64) {
		ch := make(chan error, 1)
		results[id] = ch
		go func() { ch <- s.start(sql.Lease{RunID: id, Worker: "w", Attempt: 1}) }()
	}
	ask(1)
	ltWaitFor(t, 10*time.Second, "the first start to be written", func() bool { return len(f.sizes()) == 1 })
	for id := int64(2); id <= 21; id++ {
		ask(id)
	}
	ltWaitFor(t, 10*time.Second, "the other starts to queue", func() bool { return len(s.in) == 20 })
	close(f.hold)
	for id, ch := range results {
		err := <-ch
		switch {
		case id == f.lost && !errors.Is(err, sql.ErrLeaseLost):
			t.Errorf("run %d, lease gone: %v, want ErrLeaseLost", id, err)
		case id != f.lost && err != nil:
			t.Errorf("run %d: %v", id, err)
		}
	}
	if got := f.sizes(); len(got) != 2 || got[0] != 1 || got[1] != 20 {
		t.Fatalf("batches %v, want [1 20]: the starts that piled up in one statement", got)
	}

	s.close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after close")
	}
	if err := s.start(sql.Lease{RunID: 99}); !errors.Is(err, errStarterClosed) {
		t.Fatalf("a start after close: %v, want errStarterClosed", err)
	}
}

// A failed write is every one of its workers' answer.
func TestStarterHandsTheWritesErrorToEach(t *testing.T) {
	t.Parallel()
	boom := errors.New("database gone")
	s := newStarter(nil, 4)
	s.startMany = func(context.Context, []sql.Lease) (map[int64]bool, error) { return nil, boom }
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.run()
	}()
	defer func() {
		s.close()
		<-done
	}()
	if err := s.start(sql.Lease{RunID: 1}); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the write's", err)
	}
}

// Deliveries slower than startRecordDelay are started through the
// starter, on the real database, several at once: each run shows running
// while its call is held, and ends with one attempt row whose start comes
// before its end.
func TestSlowDeliveriesAreStartedAndRecorded(t *testing.T) {
	dsn := parallelDSN(t)
	tg, release := newHangingTarget(t)
	in := startReactor(t, dsn, Config{WorkerConcurrency: 8})
	const n = 8
	ids := make([]int64, n)
	for i := range ids {
		job := createJob(t, in.db, &chronos.Job{Name: fmt.Sprintf("slow-%d", i), TargetURL: tg.URL})
		ids[i] = in.trigger(t, job.ID).ID
	}
	eventually(t, 20*time.Second, "every call in flight and every run marked running", func() bool {
		if tg.inFlight.Load() != n {
			return false
		}
		for _, id := range ids {
			if runOf(t, in.db, id).Status != chronos.StatusRunning {
				return false
			}
		}
		return true
	})
	release()
	for _, id := range ids {
		reactortest.WaitStatus(t, in.db, id, chronos.StatusSucceeded, 20*time.Second)
	}
	rows, err := in.db.Pool.Query(t.Context(),
		"SELECT run_id, started_at, finished_at FROM run_attempts WHERE run_id = ANY($1)", ids)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for rows.Next() {
		var id int64
		var start, end time.Time
		if err := rows.Scan(&id, &start, &end); err != nil {
			t.Fatal(err)
		}
		seen++
		if end.Before(start) {
			t.Errorf("run %d: its attempt ended at %s, before its start at %s", id, end, start)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if seen != n {
		t.Fatalf("%d attempt rows for %d runs, want one each", seen, n)
	}
}
