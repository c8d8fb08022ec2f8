package ui

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/chronoshq/chronos/sql"
)

// overviewWindow is how far back the overview's chart and its finished
// counts and lag look: the minutes of the last hour.
const overviewWindow = time.Hour

// settleAfter is when a minute is taken to be over for good: a run is
// stamped with the database's clock when its completing transaction
// starts, and that transaction commits within milliseconds, so nothing
// lands in a minute two minutes after it ended.
const settleAfter = 2 * time.Minute

// finishedCache keeps the per-minute statistics of the minutes that have
// settled (sql.FinishedBetween), so the overview reads only the last few
// minutes from the database rather than every run that finished in the
// hour (~60,000 at 1,000 runs a minute: tens of milliseconds). Every
// instance reads the same settled minutes, so they all show the same; a
// run deleted afterwards (with its job, or pruned by a retention shorter
// than the hour) still counts where it was counted.
type finishedCache struct {
	mu      sync.Mutex
	minutes map[time.Time]sql.MinuteStats // settled minutes only
}

// finished returns one entry per minute from now-overviewWindow to now
// (the minute of now included; zeros where nothing finished), oldest first.
func (c *Console) finished(ctx context.Context, now time.Time) ([]sql.MinuteStats, error) {
	first := now.Add(-overviewWindow).Truncate(time.Minute)
	settled := now.Add(-settleAfter).Truncate(time.Minute) // minutes before it have settled
	since := settled
	c.fin.mu.Lock()
	for m := first; m.Before(settled); m = m.Add(time.Minute) {
		if _, ok := c.fin.minutes[m]; !ok {
			since = m
			break
		}
	}
	c.fin.mu.Unlock()

	byMinute, err := c.readFinished(ctx, since, now)
	if err != nil {
		return nil, err
	}

	c.fin.mu.Lock()
	defer c.fin.mu.Unlock()
	if c.fin.minutes == nil {
		c.fin.minutes = map[time.Time]sql.MinuteStats{}
	}
	for m := range c.fin.minutes {
		// A margin: a request that read its clock a minute earlier may
		// still want the oldest minute.
		if m.Before(first.Add(-5 * time.Minute)) {
			delete(c.fin.minutes, m)
		}
	}
	out := make([]sql.MinuteStats, 0, int(overviewWindow/time.Minute)+1)
	for m := first; !m.After(now); m = m.Add(time.Minute) {
		ms, ok := byMinute[m]
		if !m.Before(since) {
			if !ok {
				ms = sql.MinuteStats{Minute: m}
			}
			if m.Before(settled) {
				c.fin.minutes[m] = ms
			}
		} else {
			ms = c.fin.minutes[m] // there: it was before the read, and is evicted only minutes later
		}
		out = append(out, ms)
	}
	return out, nil
}

// readFinished reads the minutes from since to now. A long span (the
// first request on an instance reads the whole hour) is read in parts
// concurrently, one pooled connection each: the database scans them on as
// many cores.
func (c *Console) readFinished(ctx context.Context, since, now time.Time) (map[time.Time]sql.MinuteStats, error) {
	span := int(now.Sub(since)/time.Minute) + 1
	parts := min(max(span/minutesPerPart, 1), maxParts)
	step := time.Duration((span+parts-1)/parts) * time.Minute
	results := make([][]sql.MinuteStats, parts)
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for i := range parts {
		from, until := since.Add(time.Duration(i)*step), since.Add(time.Duration(i+1)*step)
		if i == parts-1 {
			until = time.Time{} // to whatever finished after now was read
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = c.db.FinishedBetween(ctx, from, until)
		}()
	}
	wg.Wait()
	out := map[time.Time]sql.MinuteStats{}
	for i := range parts {
		if errs[i] != nil {
			return nil, errs[i]
		}
		for _, ms := range results[i] {
			out[ms.Minute] = ms
		}
	}
	return out, nil
}

// Parts of a long read of finished runs: at least minutesPerPart minutes
// each (a short read is one query), at most maxParts at once.
const (
	minutesPerPart = 10
	maxParts       = 4
)

// lagPercentiles returns the p50 and p99 of the lags the minutes' histograms
// hold, as percentile_cont computes them but to the buckets' precision
// (1.6%), zero when they hold none.
func lagPercentiles(minutes []sql.MinuteStats) (p50, p99 time.Duration) {
	hist := map[int]int64{}
	var n int64
	for _, ms := range minutes {
		for b, k := range ms.Lag {
			hist[b] += k
			n += k
		}
	}
	if n == 0 {
		return 0, 0
	}
	buckets := make([]int, 0, len(hist))
	for b := range hist {
		buckets = append(buckets, b)
	}
	sort.Ints(buckets)
	// value is the lag of the k-th smallest (0-based), to its bucket.
	value := func(k int64) time.Duration {
		var seen int64
		for _, b := range buckets {
			if seen += hist[b]; seen > k {
				return sql.LagOf(b)
			}
		}
		return sql.LagOf(buckets[len(buckets)-1])
	}
	// at interpolates between the ranks around q, as percentile_cont does.
	at := func(q float64) time.Duration {
		r := q * float64(n-1)
		lo := int64(r)
		v := value(lo)
		if frac := r - float64(lo); frac > 0 {
			v += time.Duration(frac * float64(value(lo+1)-v))
		}
		return v
	}
	return at(0.5), at(0.99)
}
