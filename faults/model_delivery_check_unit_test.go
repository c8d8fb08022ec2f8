package faults

import (
	"slices"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
)

// TestModelCheckLimits: the model's limit check on made-up data. Two
// requests of one key in flight at once break a limit of one, not a
// limit of two, nor a limit lowered from two to one while the first was
// in flight (runs leased under the old limit finish under it); a request
// whose worker was frozen, or that its client gave up on, does not count.
func TestModelCheckLimits(t *testing.T) {
	t.Parallel()
	at := msClock()
	one, two := 1, 2

	type req struct {
		run             int64
		arrive, answer  int
		aborted, frozen bool
	}
	run := func(limits []limitVersion, reqs ...req) []violation {
		key := "k1"
		s, j := madeUpSeq(t, "allow", at(0))
		j.versions[0].st.LimitKey = key
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

// TestModelCheckBackfills: the model's backfill checks on made-up data.
// A backfilled run beside a scheduled run of one occurrence is a second
// run of it; a backfilled run's request without X-Chronos-Backfill, or
// another's with it, is misflagged; a backfill's younger run arriving
// before an older one breaks "oldest first" (strictly under queue_one,
// beyond 300 ms under allow).
func TestModelCheckBackfills(t *testing.T) {
	t.Parallel()
	at := msClock()

	type run struct {
		id      int64
		trigger string
		sched   int
		arrive  int // first request (0: none)
		flag    string
	}
	check := func(overlap string, runs ...run) map[string]int {
		s, j := madeUpSeq(t, overlap, at(-60_000))
		d := &checkData{byID: map[int64]*mrun{}, byJob: map[int64][]*mrun{}, atts: map[int64]map[int]*matt{}, delRun: map[int64][]mdelivery{}}
		b := &mbackfill{job: j, from: at(-10_000), to: at(-5_000), sent: at(0), recv: at(50)}
		for _, r := range runs {
			m := &mrun{ID: r.id, Job: 1, Sched: at(r.sched), Trigger: r.trigger, Status: "succeeded", Attempts: 1, Created: at(20), FireAt: at(r.sched)}
			d.runs = append(d.runs, m)
			d.byID[m.ID] = m
			d.byJob[1] = append(d.byJob[1], m)
			if r.trigger == "backfill" {
				b.ans.Created = append(b.ans.Created, &chronos.Run{ID: r.id, ScheduledAt: m.Sched})
			}
			if r.arrive != 0 {
				x := mdelivery{Key: "j1", Run: r.id, Attempt: 1, At: at(r.arrive), Answered: at(r.arrive + 10), Done: at(r.arrive + 11),
					Status: 200, Backfill: r.flag}
				d.dels = append(d.dels, x)
				d.delRun[r.id] = []mdelivery{x}
			}
		}
		// The answer lists the plan's occurrences in the range; those not
		// created existed.
		b.ans.Occurrences = j.cur().occurrences(b.from.Add(-time.Nanosecond), b.to)
		for _, o := range b.ans.Occurrences {
			if !slices.ContainsFunc(b.ans.Created, func(r *chronos.Run) bool { return r.ScheduledAt.Equal(o) }) {
				b.ans.Existing = append(b.ans.Existing, o)
			}
		}
		s.dc.backfills = []*mbackfill{b}
		s.checkDeliveryControl(d)
		kinds := map[string]int{}
		for _, v := range s.vs {
			kinds[v.kind]++
		}
		return kinds
	}
	cases := []struct {
		name    string
		overlap string
		runs    []run
		want    string // the violation's kind, "" for none
	}{
		{"in order", "queue_one", []run{{1, "backfill", -9000, 100, "true"}, {2, "backfill", -8000, 200, "true"}}, ""},
		{"younger first under queue_one", "queue_one", []run{{1, "backfill", -9000, 300, "true"}, {2, "backfill", -8000, 200, "true"}}, "backfill-order"},
		{"younger 100 ms first under allow", "allow", []run{{1, "backfill", -9000, 300, "true"}, {2, "backfill", -8000, 200, "true"}}, ""},
		{"younger 1 s first under allow", "allow", []run{{1, "backfill", -9000, 1300, "true"}, {2, "backfill", -8000, 200, "true"}}, "backfill-order"},
		{"unflagged", "allow", []run{{1, "backfill", -9000, 100, ""}}, "backfill-flag"},
		{"a scheduled run flagged", "allow", []run{{1, "schedule", -20_000, 100, "true"}}, "backfill-flag"},
		{"two runs of one occurrence", "allow", []run{{1, "schedule", -9000, 100, ""}, {2, "backfill", -9000, 200, "true"}}, "backfill-duplicate"},
		{"never delivered", "allow", []run{{1, "backfill", -9000, 0, ""}}, "backfill-lost"},
	}
	for _, c := range cases {
		kinds := check(c.overlap, c.runs...)
		if c.want == "" && len(kinds) > 0 || c.want != "" && kinds[c.want] == 0 {
			t.Errorf("%s: violations %v, want %q", c.name, kinds, c.want)
		}
	}
}
