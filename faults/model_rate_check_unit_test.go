package faults

import (
	"sort"
	"testing"
)

// rateReqSpec is a made-up request for TestModelCheckRates: its run (0: a
// run of its own), attempt (0: the first), when the run was created and
// when the request arrived (ms), and whether its worker was the one the
// case froze.
type rateReqSpec struct {
	run             int64
	attempt         int
	created, arrive int
	frozen          bool
}

// rateBurst is n requests of runs of their own, created at created, the
// first arriving at from and one every every ms after.
func rateBurst(n, from, every, created int) []rateReqSpec {
	out := make([]rateReqSpec, n)
	for i := range out {
		out[i] = rateReqSpec{created: created, arrive: from + i*every}
	}
	return out
}

// rateRetries is the requests of runs 1 to runs, each attempted attempts
// times, created at created: every attempt of every run, one every every
// ms from from.
func rateRetries(runs, attempts, from, every, created int) []rateReqSpec {
	var out []rateReqSpec
	for a := 1; a <= attempts; a++ {
		for r := 1; r <= runs; r++ {
			out = append(out, rateReqSpec{run: int64(r), attempt: a, created: created, arrive: from + len(out)*every})
		}
	}
	return out
}

// TestModelCheckRates: the model's rate check on made-up data, with its
// slack: a request counts from the later of its run's creation and 3 s
// (modelRateTransit) before it arrived. Requests at the rate pass and a
// burst well beyond it fails; retries count as first attempts do; a burst
// of runs created just before is held to the bucket more tightly than the
// same burst of runs held since long before; after a change of the rate
// the requests are judged by the rate then in force, and those that may
// have been claimed under either are not judged; a deleted limit, a job
// moved off the key, a change of unknown outcome or a frozen worker leave
// requests unjudged (or judged from their run's creation).
func TestModelCheckRates(t *testing.T) {
	t.Parallel()
	at := msClock()
	rate := func(sent, n, per int) limitVersion {
		return limitVersion{sent: at(sent), recv: at(sent + 20), exists: true, rate: &n, per: &per}
	}
	deleted := func(sent int) limitVersion { return limitVersion{sent: at(sent), recv: at(sent + 20)} }

	type rateCase struct {
		name    string
		limits  []limitVersion
		reqs    []rateReqSpec
		unknown []int // changes of unknown outcome sent then
		movedAt int   // the job's limit_key cleared then (0: never)
		want    bool  // a violation
	}
	run := func(c rateCase) []violation {
		key := "k1"
		s, j := madeUpSeq(t, "allow", at(-20_000))
		j.versions[0].st.LimitKey = key
		if c.movedAt != 0 {
			st := j.cur()
			st.LimitKey = ""
			j.versions = append(j.versions, version{sent: at(c.movedAt), recv: at(c.movedAt + 20), st: st})
		}
		s.dc.limits[key] = c.limits
		for _, u := range c.unknown {
			s.dc.unknown[key] = append(s.dc.unknown[key], at(u))
		}
		s.stops = append(s.stops, stopRec{who: "b", at: at(2000), signal: "SIGSTOP", thawed: at(7900)})
		d := &checkData{byID: map[int64]*mrun{}, byJob: map[int64][]*mrun{}, atts: map[int64]map[int]*matt{}}
		next := int64(100)
		for _, q := range c.reqs {
			if q.run == 0 {
				q.run, next = next, next+1
			}
			q.attempt = max(q.attempt, 1)
			r := d.byID[q.run]
			if r == nil {
				r = &mrun{ID: q.run, Job: 1, Sched: at(q.created), Trigger: "manual", Status: "succeeded",
					Created: at(q.created), FireAt: at(q.created), LimitKey: &key}
				d.runs = append(d.runs, r)
				d.byID[r.ID] = r
				d.atts[r.ID] = map[int]*matt{}
			}
			r.Attempts = max(r.Attempts, q.attempt)
			worker := "a"
			if q.frozen {
				worker = "b"
			}
			d.atts[r.ID][q.attempt] = &matt{Run: r.ID, Attempt: q.attempt, Worker: worker, Started: at(q.arrive)}
			d.dels = append(d.dels, mdelivery{Key: "j1", Run: r.ID, Attempt: q.attempt, At: at(q.arrive),
				Answered: at(q.arrive + 10), Done: at(q.arrive + 11), Status: 200})
		}
		sort.SliceStable(d.dels, func(a, b int) bool { return d.dels[a].At.Before(d.dels[b].At) })
		s.checkRates(d)
		return s.vs
	}
	frozen := func(reqs []rateReqSpec) []rateReqSpec {
		for i := range reqs {
			reqs[i].frozen = true
		}
		return reqs
	}
	// A burst at 10/s before the rate was lowered to 1/s at 4 s, 20 more
	// at 10/s that may have been claimed under either (arrived within 3 s
	// after the change), and one a second well after.
	acrossTheChange := append(append(rateBurst(30, 0, 100, -10_000), rateBurst(20, 4500, 100, -10_000)...),
		rateBurst(5, 8000, 1000, -10_000)...)
	cases := []rateCase{
		{name: "at the rate", limits: []limitVersion{rate(-10_000, 2, 1)}, reqs: rateBurst(20, 5000, 500, -10_000)},
		{name: "a burst well beyond the rate", limits: []limitVersion{rate(-10_000, 2, 1)}, reqs: rateBurst(20, 5000, 50, -10_000), want: true},
		{name: "a burst of 6 held runs, rate 2/s", limits: []limitVersion{rate(-10_000, 2, 1)}, reqs: rateBurst(6, 5050, 50, -10_000)},
		{name: "a burst of 6 runs created just before, rate 2/s", limits: []limitVersion{rate(-10_000, 2, 1)},
			reqs: rateBurst(6, 5050, 50, 5000), want: true},
		{name: "first attempts of 3 fresh runs, rate 2/s", limits: []limitVersion{rate(-10_000, 2, 1)}, reqs: rateRetries(3, 1, 5050, 300, 5000)},
		{name: "their retries too", limits: []limitVersion{rate(-10_000, 2, 1)}, reqs: rateRetries(3, 3, 5050, 100, 5000), want: true},
		{name: "raised from 1/s to 10/s, a burst after", limits: []limitVersion{rate(-10_000, 1, 1), rate(4000, 10, 1)},
			reqs: rateBurst(30, 8000, 100, -10_000)},
		{name: "lowered from 10/s to 1/s, a burst after", limits: []limitVersion{rate(-10_000, 10, 1), rate(4000, 1, 1)},
			reqs: rateBurst(30, 8000, 100, -10_000), want: true},
		{name: "10/s in force, then 1/s", limits: []limitVersion{rate(-10_000, 10, 1), rate(4000, 1, 1)}, reqs: acrossTheChange},
		{name: "1/s throughout", limits: []limitVersion{rate(-10_000, 1, 1)}, reqs: acrossTheChange, want: true},
		{name: "10 per 2 s, a burst at 10/s", limits: []limitVersion{rate(-10_000, 10, 2)}, reqs: rateBurst(80, 5000, 100, -10_000), want: true},
		{name: "deleted, a burst after", limits: []limitVersion{rate(-10_000, 1, 1), deleted(4000)}, reqs: rateBurst(30, 8000, 100, -10_000)},
		{name: "the job moved off the key", limits: []limitVersion{rate(-10_000, 1, 1)}, reqs: rateBurst(30, 8000, 100, -10_000), movedAt: 5000},
		{name: "a change of unknown outcome", limits: []limitVersion{rate(-10_000, 1, 1)}, reqs: rateBurst(30, 8000, 100, -10_000), unknown: []int{4000}},
		{name: "a burst of a worker frozen since", limits: []limitVersion{rate(-10_000, 1, 1)}, reqs: frozen(rateBurst(10, 8000, 100, -5000))},
		{name: "the same burst, no worker frozen", limits: []limitVersion{rate(-10_000, 1, 1)}, reqs: rateBurst(10, 8000, 100, -5000), want: true},
	}
	for _, c := range cases {
		vs := run(c)
		if got := len(vs) > 0; got != c.want {
			t.Errorf("%s: violations %v, want a violation: %v", c.name, vs, c.want)
		}
	}
}
