package bench

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
)

func TestTally(t *testing.T) {
	t.Parallel()
	ty := &tally{base: 100}
	at := time.Now()
	for _, id := range []int64{101, 102, 102, 100_000, 101} {
		ty.observe(arrival{at: at, path: "/s", runID: id, scheduledAt: at.Add(-time.Millisecond)})
	}
	// A cron job's delivery is a cron lag, not a run of the load (nor a
	// stray), whatever its run id.
	ty.observe(arrival{at: at, path: cronPath + "3", runID: 103, scheduledAt: at.Add(-2 * time.Millisecond)})
	n, lags, cron := ty.cut()
	if n != 5 || len(lags) != 5 || lags[0] != time.Millisecond {
		t.Errorf("window: %d deliveries, lags %v", n, lags)
	}
	if len(cron) != 1 || cron[0] != 2*time.Millisecond {
		t.Errorf("window: cron lags %v, want [2ms]", cron)
	}
	if n, lags, cron := ty.cut(); n != 0 || lags != nil || cron != nil {
		t.Errorf("cut twice: %d, %v, %v", n, lags, cron)
	}
	if d, dups := ty.totals(); d != 3 || dups != 2 || ty.count() != 3 {
		t.Errorf("totals %d distinct, %d duplicates; want 3 and 2", d, dups)
	}
}

func TestFlatness(t *testing.T) {
	t.Parallel()
	win := func(end time.Duration, n int, p99 time.Duration, size float64) sustainedWin {
		return sustainedWin{end: end, length: time.Minute, delivered: n, lags: pct{p99: p99},
			sizes: historySizes{runs: relSize{total: size}}}
	}
	// Retention 2m + the pruner's minute: the window from 3m to 4m is the
	// first to compare.
	var wins []sustainedWin
	for i := 1; i <= 6; i++ {
		wins = append(wins, win(time.Duration(i)*time.Minute, 60*3000, 4*time.Millisecond, float64(i)*100))
	}
	wins[5] = win(6*time.Minute, 60*2900, 8*time.Millisecond, 420) // size +5%, lag +4 ms
	res := &result{}
	flatness(res, wins, time.Minute, 2*time.Minute)
	if v, _ := res.Get("size_change"); math.Abs(v-5) > 0.01 {
		t.Errorf("size_change = %v, want 5", v)
	}
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "runs/s yes, lag p99 yes, size yes") {
		t.Errorf("notes %v", res.Notes)
	}

	res = &result{}
	flatness(res, wins[:4], time.Minute, 2*time.Minute) // one window after retention: nothing to compare
	if v, _ := res.Get("size_change"); !math.IsNaN(v) || !strings.Contains(res.Notes[0], "n/a") {
		t.Errorf("short run: size_change %v, notes %v", v, res.Notes)
	}
}

func TestHerdExpr(t *testing.T) {
	t.Parallel()
	for _, at := range []time.Time{
		time.Date(2026, 7, 5, 14, 30, 7, 0, time.UTC),
		time.Date(2027, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(2026, 3, 1, 0, 0, 0, 0, time.FixedZone("X", 3600)),
	} {
		expr := herdExpr(at)
		next, err := chronos.NextOccurrence(expr, time.UTC, at.Add(-time.Second))
		if err != nil || !next.Equal(at) {
			t.Errorf("%s: %q next %s, %v", at, expr, next, err)
		}
		after, err := chronos.NextOccurrence(expr, time.UTC, at)
		if err != nil || after.Sub(at) < 364*24*time.Hour {
			t.Errorf("%s: %q fires again at %s, want a year later", at, expr, after)
		}
	}
}
