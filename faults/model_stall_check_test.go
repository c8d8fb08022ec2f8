package faults

import (
	"testing"
	"time"
)

// TestModelCheckStalledLeaderIsAGap: the model's schedule check on made-up
// data. An instance holds the leadership lock throughout while a
// per-second job's occurrences are folded into a catch-up: when the job
// was left behind meanwhile (the lock holder created no run: stalled), it
// is a gap, the misfire policy's business, counted as a stall; when the
// job was kept ahead all along, it is "folded-while-leading". Before, the
// lock alone decided, and a leader stalled 7-10 s on a loaded machine
// (or frozen by the model's stall) failed the run with folds and misses
// the docs call a gap.
func TestModelCheckStalledLeaderIsAGap(t *testing.T) {
	t.Parallel()
	at := msClock()

	run := func(behind, down bool) *seqRun {
		s, j := madeUpSeq(t, "allow", at(0))
		s.endAt, s.behind = at(12_000), &behindSampler{}
		d := &checkData{byID: map[int64]*mrun{}, byJob: map[int64][]*mrun{}, delRun: map[int64][]mdelivery{}}
		// Runs for 1..3 s, then a catch-up for 9 s created at 9.2 s, then
		// 10 and 11 s on time: 4..8 s folded.
		add := func(id int64, sched, created int, catchUp bool) {
			r := &mrun{ID: id, Job: 1, Sched: at(sched), Trigger: "schedule", CatchUp: catchUp, Status: "succeeded",
				Attempts: 1, Created: at(created), FireAt: at(sched)}
			f := at(sched + 100)
			r.Finished = &f
			d.runs = append(d.runs, r)
			d.byID[id] = r
			d.byJob[1] = append(d.byJob[1], r)
		}
		for i, sec := range []int{1, 2, 3} {
			add(int64(i+1), sec*1000, sec*1000-1500, false)
		}
		add(4, 9000, 9200, true)
		add(5, 10_000, 8500+900, false)
		add(6, 11_000, 9500, false)
		// Instance a holds the lock at every sample (but while the
		// cluster is down, from 5 to 9 s).
		for ms := 0; ms <= 12_000; ms += 50 {
			name := "a"
			if down && ms >= 5000 && ms < 9000 {
				name = ""
			}
			d.samples = append(d.samples, leaderSample{at: at(ms), name: name})
			x := behindSample{at: at(ms)}
			if behind && ms >= 5000 && ms < 9200 {
				x.jobs = []int64{1}
			}
			s.behind.samples = append(s.behind.samples, x)
		}
		s.checkSchedule(d, j)
		return s
	}

	s := run(true, false)
	if len(s.vs) != 0 {
		t.Errorf("a job left behind under a stalled lock holder: violations %v, want none (a gap)", s.vs)
	}
	if s.stalls == 0 {
		t.Error("the folds under a stalled lock holder were not counted as stalls")
	}
	// The cluster stopped after the runs of 4 and 5 s were created ahead
	// (the job kept ahead) and before they went out: the leader after the
	// gap folds them, which is the gap's misfire policy, not a fault.
	if s := run(false, true); len(s.vs) != 0 {
		t.Errorf("runs created ahead and folded after a cluster stop: violations %v, want none (a gap)", s.vs)
	}
	s = run(false, false)
	folded := 0
	for _, v := range s.vs {
		if v.kind == "folded-while-leading" {
			folded++
		}
	}
	if folded == 0 {
		t.Errorf("a job kept ahead and folded under a working leader: violations %v, want folded-while-leading", s.vs)
	}
}

// msClock returns instants given in milliseconds after a fixed base: the
// clock of the checks' made-up data.
func msClock() func(ms int) time.Time {
	base := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	return func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
}

// madeUpSeq is a sequence that knows one job, j1 (id 1): a per-second
// cron job in UTC with the given overlap, created at created, for the
// checks on made-up data.
func madeUpSeq(t *testing.T, overlap string, created time.Time) (*seqRun, *mjob) {
	st := jobState{ID: 1, Enabled: true, Cron: "* * * * * *", TZ: "UTC", Overlap: overlap, Misfire: "one", Created: created}
	j := &mjob{key: "j1", id: 1, versions: []version{{sent: created, recv: created.Add(50 * time.Millisecond), st: st}}, manual: map[int64]string{}}
	s := &seqRun{t: t, byID: map[int64]*mjob{1: j}, jobs: []*mjob{j}, gatedSeen: map[string]int{}, dc: newDeliveryModel()}
	return s, j
}

// TestModelCheckEndedWindowLateRuns: the late-burst check on made-up
// data. Two runs created ahead of a per-second job go out late together
// after a gap: a late burst, whether or not the job's window had ended by
// then (session 15 left the ended window out of the check; migration 036
// made the cluster fold those runs too).
func TestModelCheckEndedWindowLateRuns(t *testing.T) {
	t.Parallel()
	at := msClock()
	late := func(ends *time.Time) []string {
		s, j := madeUpSeq(t, "allow", at(0))
		j.versions[0].st.EndsAt = ends
		d := &checkData{byID: map[int64]*mrun{}, byJob: map[int64][]*mrun{}, delRun: map[int64][]mdelivery{}}
		for i, sec := range []int{2, 3} {
			id := int64(i + 1)
			r := &mrun{ID: id, Job: 1, Sched: at(sec * 1000), Trigger: "schedule", Status: "succeeded", Attempts: 1,
				Created: at(sec*1000 - 1500), FireAt: at(sec * 1000)}
			d.runs = append(d.runs, r)
			d.byID[id] = r
			d.byJob[1] = append(d.byJob[1], r)
			d.delRun[id] = []mdelivery{{Key: "j1", Run: id, Attempt: 1, At: at(9000 + i*10)}}
		}
		s.checkLate(d, j)
		var kinds []string
		for _, v := range s.vs {
			kinds = append(kinds, v.kind)
		}
		return kinds
	}
	if got := late(nil); len(got) != 1 || got[0] != "late-burst" {
		t.Errorf("two late runs after a gap, window open: violations %v, want one late-burst", got)
	}
	ends := at(3500)
	if got := late(&ends); len(got) != 1 || got[0] != "late-burst" {
		t.Errorf("two late runs after a gap, window ended at 3.5 s: violations %v, want one late-burst", got)
	}
}

// TestModelCheckCatchUpFlaggedUnderLaterPolicy: the catch-up-early check
// on made-up data. A run created ahead under misfire "none", held (by a
// limit) past its instant and across a gap that the leader found after
// the job changed to "all", is flagged a catch-up then: not early. The
// model met it (seed 1796481526111972719). With no "all" between its
// instant and its end, the same run is flagged early.
func TestModelCheckCatchUpFlaggedUnderLaterPolicy(t *testing.T) {
	t.Parallel()
	at := msClock()
	early := func(laterAll bool) int {
		s, j := madeUpSeq(t, "allow", at(0))
		j.versions[0].st.Misfire = "none"
		if laterAll {
			st := j.versions[0].st
			st.Misfire = "all"
			j.versions = append(j.versions, version{sent: at(10000), recv: at(10050), st: st})
		}
		finished := at(22000)
		r := &mrun{ID: 1, Job: 1, Sched: at(8000), Trigger: "schedule", CatchUp: true, Status: "succeeded", Attempts: 2,
			Created: at(6300), FireAt: at(8000), Finished: &finished}
		d := &checkData{byID: map[int64]*mrun{1: r}, byJob: map[int64][]*mrun{1: {r}}, delRun: map[int64][]mdelivery{}}
		d.runs = append(d.runs, r)
		s.checkSchedule(d, j)
		n := 0
		for _, v := range s.vs {
			if v.kind == "catch-up-early" {
				n++
			}
		}
		return n
	}
	if n := early(true); n != 0 {
		t.Errorf("flagged after a change to misfire all: %d catch-up-early violations, want none", n)
	}
	if n := early(false); n != 1 {
		t.Errorf("misfire none throughout: %d catch-up-early violations, want one", n)
	}
}
