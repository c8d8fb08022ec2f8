package faults

import (
	"testing"
	"time"
)

// TestModelCheckLimits: the model's limit check on made-up data. Two
// requests of one key in flight at once break a limit of one, not a
// limit of two, nor a limit lowered from two to one while the first was
// in flight (runs leased under the old limit finish under it); a request
// whose worker was frozen, or that its client gave up on, does not count.
func TestModelCheckLimits(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	one, two := 1, 2

	type req struct {
		run             int64
		arrive, answer  int
		aborted, frozen bool
	}
	run := func(limits []limitVersion, reqs ...req) []violation {
		key := "k1"
		st := jobState{ID: 1, Enabled: true, Cron: "* * * * * *", TZ: "UTC", Overlap: "allow", Misfire: "one", Created: at(0), LimitKey: key}
		j := &mjob{key: "j1", id: 1, versions: []version{{sent: at(0), recv: at(50), st: st}}, manual: map[int64]string{}}
		s := &seqRun{t: t, byID: map[int64]*mjob{1: j}, jobs: []*mjob{j}, gatedSeen: map[string]int{}, dc: newDeliveryModel()}
		s.dc.limits[key] = limits
		d := &checkData{byID: map[int64]*mrun{}, byJob: map[int64][]*mrun{}, atts: map[int64]map[int]*matt{}}
		for _, q := range reqs {
			r := &mrun{ID: q.run, Job: 1, Sched: at(q.arrive), Trigger: "schedule", Status: "succeeded", Attempts: 1,
				Created: at(q.arrive - 500), FireAt: at(q.arrive), LimitKey: &key}
			d.runs = append(d.runs, r)
			d.byID[r.ID] = r
			worker := "a"
			if q.frozen {
				worker = "b"
				s.stops = append(s.stops, stopRec{who: "b", at: at(q.arrive), signal: "SIGSTOP", thawed: at(q.answer)})
			}
			d.atts[r.ID] = map[int]*matt{1: {Run: r.ID, Attempt: 1, Worker: worker, Started: at(q.arrive)}}
			x := mdelivery{Key: "j1", Run: r.ID, Attempt: 1, At: at(q.arrive), Done: at(q.answer + 1), Aborted: q.aborted}
			if !q.aborted {
				x.Answered = at(q.answer)
			}
			d.dels = append(d.dels, x)
		}
		s.checkLimits(d)
		return s.vs
	}
	limit := func(sent int, max *int) limitVersion {
		return limitVersion{sent: at(sent), recv: at(sent + 20), exists: true, max: max}
	}
	overlapping := []req{{run: 1, arrive: 1000, answer: 2000}, {run: 2, arrive: 1500, answer: 1600}}
	cases := []struct {
		name   string
		limits []limitVersion
		reqs   []req
		want   bool
	}{
		{"two in flight, limit 1", []limitVersion{limit(0, &one)}, overlapping, true},
		{"two in flight, limit 2", []limitVersion{limit(0, &two)}, overlapping, false},
		{"one after the other, limit 1", []limitVersion{limit(0, &one)},
			[]req{{run: 1, arrive: 1000, answer: 1400}, {run: 2, arrive: 1500, answer: 1600}}, false},
		{"lowered from 2 to 1 while the first was in flight", []limitVersion{limit(0, &two), limit(1200, &one)}, overlapping, false},
		{"lowered from 2 to 1 long before", []limitVersion{limit(0, &two), limit(200, &one)},
			[]req{{run: 1, arrive: 3000, answer: 4000}, {run: 2, arrive: 3500, answer: 3600}}, true},
		{"deleted meanwhile", []limitVersion{limit(0, &one), {sent: at(1200), recv: at(1220)}}, overlapping, false},
		{"the first one's client gave up", []limitVersion{limit(0, &one)},
			[]req{{run: 1, arrive: 1000, answer: 2000, aborted: true}, {run: 2, arrive: 1500, answer: 1600}}, false},
		{"the first one's worker was frozen", []limitVersion{limit(0, &one)},
			[]req{{run: 1, arrive: 1000, answer: 2000, frozen: true}, {run: 2, arrive: 1500, answer: 1600}}, false},
	}
	for _, c := range cases {
		vs := run(c.limits, c.reqs...)
		if got := len(vs) > 0; got != c.want {
			t.Errorf("%s: violations %v, want a violation: %v", c.name, vs, c.want)
		}
	}
}
