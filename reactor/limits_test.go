package reactor

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// twoLimitedReactors starts two instances with listeners on one database
// and a limit declared there.
func twoLimitedReactors(t *testing.T, l *chronos.Limit) (a, b *instance) {
	t.Helper()
	dsn := sqltest.NewURL(t)
	cfg := Config{WorkerConcurrency: 8, IdlePollInterval: time.Second, ReaperInterval: time.Second}
	a = startReactor(t, dsn, withInstance(cfg, "limit-a"))
	b = startReactor(t, dsn, withInstance(cfg, "limit-b"))
	startListener(t, dsn, "limit-a", a.bus)
	startListener(t, dsn, "limit-b", b.bus)
	if _, err := a.db.PutLimit(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	return a, b
}

// TestTwoReactorsShareAConcurrencyLimit: two instances with 8 workers each
// deliver 60 runs of three jobs sharing a limit of 3: never more than 3
// at the target at once, every run delivered once; a job of no key beside
// them is not held up by the 57 waiting.
func TestTwoReactorsShareAConcurrencyLimit(t *testing.T) {
	t.Parallel()
	c := 3
	a, b := twoLimitedReactors(t, &chronos.Limit{Key: "shared", MaxConcurrency: &c})
	limited := newTarget(t, func(http.ResponseWriter, *http.Request) {
		time.Sleep(40 * time.Millisecond) // the target's work: what makes runs overlap
	})
	free := newTarget(t, nil)
	key := "shared"
	var jobs []int64
	for i := range 3 {
		expr := "0 0 1 1 *"
		j := createJob(t, a.db, &chronos.Job{Name: "limited-" + string(rune('a'+i)), CronExpr: &expr,
			TargetURL: limited.URL, LimitKey: &key})
		jobs = append(jobs, j.ID)
	}
	expr := "0 0 1 1 *"
	other := createJob(t, a.db, &chronos.Job{Name: "free", CronExpr: &expr, TargetURL: free.URL})
	for i := range 60 {
		in := a
		if i%2 == 1 {
			in = b
		}
		in.trigger(t, jobs[i%3])
	}
	for range 5 {
		b.trigger(t, other.ID)
	}
	eventually(t, 30*time.Second, "the free job's 5 runs", func() bool { return free.hits.Load() == 5 })
	if n := limited.hits.Load(); n >= 60 {
		t.Errorf("the free job's runs waited for all 60 limited ones")
	}
	eventually(t, 60*time.Second, "60 limited runs delivered", func() bool { return limited.hits.Load() == 60 })
	if m := limited.maxSeen.Load(); m > 3 || m < 2 {
		t.Errorf("at most %d requests at the target at once, want 2 or 3 (limit 3)", m)
	}
	l, err := a.db.Limit(context.Background(), "shared")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "nothing left in flight", func() bool {
		l, err = a.db.Limit(context.Background(), "shared")
		return err == nil && l.InFlight == 0 && l.Waiting == 0
	})
	time.Sleep(100 * time.Millisecond) // a duplicate delivery would show by now
	if n := limited.hits.Load(); n != 60 {
		t.Errorf("%d limited requests, want 60", n)
	}
}

// TestTwoReactorsShareARateLimit: 80 runs under a rate of 20 per second,
// claimed by two instances: in any stretch of arrivals at the target, at
// most the bucket (20) plus 20 per second elapsed (and a quarter second
// of delivery jitter), plus one for the clocks' rounding; and all of them
// arrive.
func TestTwoReactorsShareARateLimit(t *testing.T) {
	t.Parallel()
	rate, per := 20, 1
	a, b := twoLimitedReactors(t, &chronos.Limit{Key: "paced", Rate: &rate, PerSeconds: &per})
	tg := newTarget(t, nil)
	key := "paced"
	expr := "0 0 1 1 *"
	j := createJob(t, a.db, &chronos.Job{Name: "paced", CronExpr: &expr, TargetURL: tg.URL, LimitKey: &key})
	start := time.Now()
	for i := range 80 {
		if i%2 == 0 {
			a.trigger(t, j.ID)
		} else {
			b.trigger(t, j.ID)
		}
	}
	eventually(t, 30*time.Second, "80 runs delivered", func() bool { return tg.hits.Load() == 80 })
	elapsed := time.Since(start)
	if elapsed < 2500*time.Millisecond {
		t.Errorf("80 runs at 20/s (20 at once) took %s, want at least 2.5 s", elapsed)
	}
	arr := tg.Arrivals()
	for i := range arr {
		for k := i; k < len(arr); k++ {
			// A lease takes its token; the request reaches the target a
			// worker's moment later, so arrivals may bunch by as much as
			// deliveries jitter: a quarter second of tokens for that.
			allowed := 20 + int(20*(arr[k].Sub(arr[i]).Seconds()+0.25)) + 1
			if n := k - i + 1; n > allowed {
				t.Fatalf("%d requests arrived within %s, want at most %d", n, arr[k].Sub(arr[i]), allowed)
			}
		}
	}
	t.Logf("80 runs at 20/s: %s", elapsed)
}
