package bench

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// scheduleGrace is how long the schedule scenario waits, after its
// window's last occurrence, for the deliveries still missing.
const scheduleGrace = 30 * time.Second

// runSchedule is the schedule scenario: K jobs on a seconds-level cron for
// D seconds; the lag of each delivery behind its scheduled instant, and
// every occurrence in the window delivered exactly once.
func runSchedule(ctx context.Context, e *env, f Config) (*result, error) {
	k, seconds := f.Jobs, int(f.Duration/time.Second)
	if seconds < 1 {
		seconds = 1
	}
	res := &result{Scenario: "schedule"}
	res.param("jobs", k)
	res.param("seconds", seconds)
	res.param("instances", f.Instances)
	// Misfire "all": should the instance stall past the materializer's
	// lookahead (a starved machine: CI at load 24 stalled it 2 s), each
	// occurrence still runs, late, and the stall shows as lag. Under the
	// default ("one") the stall would fold a second's occurrences into one
	// catch-up, by design, and the bench would count them missed, when
	// missed here means what no policy allows: an occurrence lost.
	for i := range k {
		_, err := e.createJob(ctx, map[string]any{
			"name": fmt.Sprintf("bench-schedule-%d", i), "cron_expr": "*/1 * * * * *",
			"target_url": fmt.Sprintf("%s/s/%d", e.target.base, i), "max_retries": 0,
			"misfire": "all",
		})
		if err != nil {
			return nil, err
		}
	}
	// The window starts a whole second after the last job was created:
	// its first occurrence is well inside every job's schedule.
	firstAt := time.Now().Truncate(time.Second).Add(2 * time.Second)
	lastAt := firstAt.Add(time.Duration(seconds-1) * time.Second)
	expected := k * seconds
	inWindow := func(a arrival) bool {
		return strings.HasPrefix(a.path, "/s/") && !a.scheduledAt.Before(firstAt) && !a.scheduledAt.After(lastAt)
	}
	// Wait until the last occurrence is past, then until each one arrived
	// (or a generous grace ran out: what is still missing is missed).
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(time.Until(lastAt)):
	}
	collect := func() map[scheduleOccurrence][]time.Time {
		got := map[scheduleOccurrence][]time.Time{}
		for _, a := range e.target.snapshot() {
			if inWindow(a) {
				o := scheduleOccurrence{a.path, a.scheduledAt.UnixNano()}
				got[o] = append(got[o], a.at)
			}
		}
		return got
	}
	// The grace only ever runs out when something is missing: on a
	// starved machine (CI at load 17) deliveries came 8.6 s late, and
	// misfire "all" sends a stall's occurrences one after another.
	graceEnd := time.Now().Add(scheduleGrace)
	for len(collect()) < expected && time.Now().Before(graceEnd) {
		time.Sleep(20 * time.Millisecond)
	}
	// One more beat, so a duplicate right behind the first delivery counts.
	time.Sleep(200 * time.Millisecond)
	got := collect()
	dups := 0
	var lags []time.Duration
	// The earliest delivery of each scheduled instant, over all jobs: when
	// it is late too, the whole second was late (timer, claim); when only
	// the rest are, the burst itself took the time.
	earliest := map[int64]time.Duration{}
	for o, ats := range got {
		dups += len(ats) - 1
		first := ats[0]
		for _, at := range ats {
			if at.Before(first) {
				first = at
			}
		}
		lag := first.Sub(time.Unix(0, o.at))
		lags = append(lags, lag)
		if e, ok := earliest[o.at]; !ok || lag < e {
			earliest[o.at] = lag
		}
	}
	var firsts []time.Duration
	for _, d := range earliest {
		firsts = append(firsts, d)
	}
	p := percentiles(lags)
	missed := expected - len(got)
	res.spread("lag_", p)
	res.ms("lag_min", p.min)
	pf := percentiles(firsts)
	res.ms("first_of_instant_p50", pf.p50)
	res.ms("first_of_instant_p99", pf.p99)
	res.metric("occurrences", float64(expected), "runs")
	res.metric("missed", float64(missed), "runs")
	res.metric("duplicated", float64(dups), "requests")
	if missed != 0 {
		res.fail("schedule: %d of %d occurrences missed (none arrived within %s of the last): %s",
			missed, expected, scheduleGrace, missingOccurrences(got, k, firstAt, seconds))
	}
	if dups != 0 {
		res.fail("schedule: %d occurrences delivered more than once", dups)
	}
	if p.min < 0 {
		res.fail("schedule: a delivery arrived %s before its scheduled instant", -p.min)
	}
	return res, nil
}

// scheduleOccurrence is one job's occurrence in the schedule scenario: the
// job's path at the target and the scheduled instant.
type scheduleOccurrence struct {
	path string
	at   int64 // scheduled instant, Unix ns
}

// missingOccurrences names up to five of the window's occurrences that got
// holds no delivery of, for a failure that says which ones.
func missingOccurrences(got map[scheduleOccurrence][]time.Time, jobs int, firstAt time.Time, seconds int) string {
	var out []string
	for s := range seconds {
		at := firstAt.Add(time.Duration(s) * time.Second)
		for i := range jobs {
			o := scheduleOccurrence{fmt.Sprintf("/s/%d", i), at.UnixNano()}
			if _, ok := got[o]; !ok && len(out) < 5 {
				out = append(out, fmt.Sprintf("%s at %s", o.path, at.Format("15:04:05")))
			}
		}
	}
	return strings.Join(out, ", ")
}
