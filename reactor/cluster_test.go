package reactor

import (
	"fmt"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
)

// Two instances on one database, 50 jobs firing every second for about ten
// seconds: every occurrence in the window is delivered exactly once.
func TestTwoReactorsEveryOccurrenceOnce(t *testing.T) {
	dsn := parallelDSN(t)

	type key struct {
		job   string
		sched string
	}
	var (
		mu   sync.Mutex
		seen = map[key]int{}
		runs = map[string]int{}
		lags []time.Duration
	)
	tg := newTarget(t, func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		sched := r.Header.Get(HeaderScheduledAt)
		k := key{r.URL.Query().Get("job"), sched}
		mu.Lock()
		defer mu.Unlock()
		seen[k]++
		runs[r.Header.Get(HeaderRunID)]++
		if at, err := time.Parse(time.RFC3339Nano, sched); err == nil {
			lags = append(lags, now.Sub(at))
		}
	})

	cfg := Config{WorkerConcurrency: 16, IdlePollInterval: time.Second, ReaperInterval: time.Second}
	a := startReactor(t, dsn, withInstance(cfg, "cluster-a"))
	b := startReactor(t, dsn, withInstance(cfg, "cluster-b"))
	startListener(t, dsn, "cluster-a", a.bus)
	startListener(t, dsn, "cluster-b", b.bus)

	const jobs = 50
	names := make([]string, jobs)
	for i := range names {
		expr := "*/1 * * * * *"
		names[i] = fmt.Sprintf("every-second-%d", i)
		// misfire all: what this test checks is that two instances deliver
		// each occurrence once. On a machine loaded enough to stall the
		// leader for seconds (a `make test` at load average 17 did), the
		// default policy folds the occurrences of the stall into one
		// catch-up run, as it should, and they read as never delivered.
		createJob(t, a.db, &chronos.Job{Name: names[i], CronExpr: &expr, Misfire: chronos.MisfireAll,
			TargetURL: tg.URL + "/?job=" + names[i]})
	}
	// The window: whole seconds strictly after every job exists, until ten
	// seconds later. Occurrences outside it may or may not have fired.
	from := time.Now().Truncate(time.Second).Add(time.Second)
	to := from.Add(9 * time.Second)
	time.Sleep(time.Until(to))
	// Then until every occurrence of the window has arrived (a loaded
	// machine may take a while: a throttled CI run was late past 30 s),
	// or a generous deadline passes; what is missing then is reported
	// below.
	all := func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range names {
			for s := from; !s.After(to); s = s.Add(time.Second) {
				if seen[key{id, s.UTC().Format(time.RFC3339Nano)}] == 0 {
					return false
				}
			}
		}
		return true
	}
	for deadline := time.Now().Add(90 * time.Second); !all() && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	// A moment more for a duplicate delivery to show up.
	time.Sleep(500 * time.Millisecond)

	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	defer mu.Unlock()
	missing, dup := 0, 0
	for _, id := range names {
		for s := from; !s.After(to); s = s.Add(time.Second) {
			k := key{id, s.UTC().Format(time.RFC3339Nano)}
			switch n := seen[k]; {
			case n == 0:
				missing++
				if missing <= 5 {
					t.Errorf("job %s: occurrence %s never delivered", id, k.sched)
				}
			case n > 1:
				dup++
				if dup <= 5 {
					t.Errorf("job %s: occurrence %s delivered %d times", id, k.sched, n)
				}
			}
		}
	}
	for id, n := range runs {
		if n > 1 {
			t.Errorf("run %s delivered %d times", id, n)
		}
	}
	t.Logf("window %s..%s: %d occurrences expected, %d missing, %d duplicated; %d requests in all",
		from.Format(time.TimeOnly), to.Format(time.TimeOnly), jobs*10, missing, dup, tg.hits.Load())
	if len(lags) > 0 {
		sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
		t.Logf("scheduled instant -> target: p50 %s p99 %s max %s", lags[len(lags)/2], lags[len(lags)*99/100], lags[len(lags)-1])
	}
	a.noneLeased(t, "after both stopped")
}

func withInstance(c Config, name string) Config {
	c.Instance = name
	return c
}
