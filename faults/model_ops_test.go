package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/chronoshq/chronos"
)

// The operations of the model. Every random choice is drawn from the
// sequence's generator in an order that depends only on the model's own
// state (never on what the cluster answered or how long it took), so a
// seed always produces the same sequence of operations.

// Model limits: jobs alive at once, and slow targets per sequence (each
// keeps up to three workers busy).
const (
	maxModelJobs = 12
	maxSlowJobs  = 3
	// eventSpacing is the fewest operations between two cluster events.
	eventSpacing = 5
)

var (
	modelCrons = []string{"*/1 * * * * *", "*/1 * * * * *", "* * * * * *", "*/2 * * * * *", "*/2 * * * * *", "*/3 * * * * *"}
	modelZones = []string{"UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Eucla", "Pacific/Chatham"}
	modelSkews = []time.Duration{-5 * time.Second, -3 * time.Second, -2 * time.Second, 2 * time.Second, 3 * time.Second, 5 * time.Second}
)

// do performs one random operation.
func (s *seqRun) do() {
	s.nops++
	// The instance an API call of this operation goes to: drawn for every
	// operation, so the stream of choices does not depend on outcomes.
	s.via = s.rng.IntN(len(s.c.insts))
	alive := 0
	for _, j := range s.jobs {
		if !j.deleted {
			alive++
		}
	}
	event := s.nops-s.lastEvent >= eventSpacing
	// 0..119: the operations of issue 22 and before, in their weights;
	// 120 and up: delivery control (limits, backfills, calendars), 12 by
	// default (-model.dc).
	r := s.rng.IntN(120 + max(*modelDCWeight, 0))
	switch {
	case s.nops <= 3:
		s.create(s.nops == 3)
	case r < 12 && alive < maxModelJobs:
		s.create(false)
	case r < 20 && alive < maxModelJobs:
		s.create(true)
	case r < 28:
		s.pause()
	case r < 35:
		s.resume()
	case r < 41:
		s.toggle()
	case r < 46:
		s.patchCron()
	case r < 51:
		s.patchZone()
	case r < 58:
		s.patchOverlap()
	case r < 61:
		s.patchRunAt()
	case r < 72:
		s.trigger()
	case r < 78:
		s.redrive()
	case r < 81:
		s.remove()
	case r < 86 && event:
		s.killLeader()
	case r < 91 && event:
		s.restart(s.c.insts[s.rng.IntN(len(s.c.insts))], 0, false)
	case r >= 120:
		s.deliveryOp((r - 120) * 12 / max(*modelDCWeight, 1))
	case r >= 100:
		s.patchPolicy()
	case r >= 96 && event:
		s.stallLeader()
	case r < 96 && event:
		// One skewed instance at a time: the design allows a skewed
		// instance to fire late by its skew, which the others (claiming
		// on time) must never have to show.
		in := s.c.insts[s.rng.IntN(len(s.c.insts))]
		skew := modelSkews[s.rng.IntN(len(modelSkews))]
		for _, other := range s.c.insts {
			if s.skew[other.id] != 0 {
				in, skew = other, 0
			}
		}
		if s.skew[in.id] != 0 && s.rng.IntN(2) == 0 {
			skew = modelSkews[s.rng.IntN(len(modelSkews))] // another skew, same instance
		}
		s.restart(in, skew, true)
	default:
		s.trigger()
	}
}

// call sends one API request to the operation's instance (all are up
// between operations) and times it.
func (s *seqRun) call(method, path string, body, out any) (code int, sent, recv time.Time, via string, err error) {
	in := s.c.insts[s.via]
	via = in.id
	if sk := s.skew[in.id]; sk != 0 {
		via += fmt.Sprintf("(skew %s)", sk)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.apiCalls++
	sent = time.Now()
	code, err = s.c.apiOn(ctx, in, method, path, body, out)
	recv = time.Now()
	return code, sent, recv, via, err
}

// pickJob draws one of the live jobs that satisfy f, or nil.
func (s *seqRun) pickJob(f func(*mjob) bool) *mjob {
	var c []*mjob
	for _, j := range s.jobs {
		if !j.deleted && j.id != 0 && f(j) {
			c = append(c, j)
		}
	}
	if len(c) == 0 {
		return nil
	}
	return c[s.rng.IntN(len(c))]
}

// recent reports whether the job was created within the last few
// operations (a one-shot then still lies ahead).
func (s *seqRun) recent(j *mjob) bool { return s.nops-j.op <= 5 }

func (s *seqRun) behaviour() behaviour {
	b := behaviour{delay: time.Duration(s.rng.IntN(40)) * time.Millisecond}
	switch r := s.rng.IntN(100); {
	case r < 55:
	case r < 75:
		if s.slow < maxSlowJobs {
			s.slow++
			b.delay = time.Duration(1200+s.rng.IntN(1800)) * time.Millisecond
		}
	case r < 88:
		b.fail = 1
	default:
		b.fail = -1
	}
	return b
}

func (s *seqRun) overlap(slow bool) string {
	r := s.rng.IntN(100)
	if slow {
		r = 30 + r*7/10 // mostly skip and queue_one: the limits are what slow targets test
	}
	switch {
	case r < 50:
		return "allow"
	case r < 75:
		return "skip"
	}
	return "queue_one"
}

// runAtAhead is a whole second one to four seconds from now.
func (s *seqRun) runAtAhead() time.Time {
	d := time.Duration(1000+s.rng.IntN(2000)) * time.Millisecond
	return time.Now().Add(d).Truncate(time.Second).Add(time.Second).UTC()
}

// create adds a cron job (every one to three seconds) or a one-shot a
// second or few ahead.
func (s *seqRun) create(oneShot bool) {
	j := &mjob{key: fmt.Sprintf("j%d", len(s.jobs)+1), op: s.nops, manual: map[int64]string{}}
	j.behave = s.behaviour()
	j.maxRetries = s.rng.IntN(3)
	body := map[string]any{
		"name":                 j.key,
		"target_url":           s.tg.url(j.key),
		"max_retries":          j.maxRetries,
		"backoff":              "linear",
		"backoff_base_seconds": float64(2+s.rng.IntN(4)) / 10,
		"backoff_max_seconds":  1,
		"timeout_seconds":      10,
		"overlap":              s.overlap(j.behave.delay >= time.Second),
		"timezone":             modelZones[s.rng.IntN(len(modelZones))],
	}
	kind := "cron"
	if oneShot {
		kind = "once"
		body["run_at"] = s.runAtAhead().Format(time.RFC3339)
		if s.rng.IntN(4) == 0 {
			body["jitter_seconds"] = 1 + s.rng.IntN(2)
		}
	} else {
		body["cron_expr"] = modelCrons[s.rng.IntN(len(modelCrons))]
		s.policies(body, cronGap(body["cron_expr"].(string)))
	}
	s.deliveryOnCreate(body, !oneShot)
	s.tg.set(j.key, j.behave)
	s.jobs = append(s.jobs, j)
	var out chronos.Job
	code, sent, recv, via, err := s.call(http.MethodPost, "/v1/jobs", body, &out)
	desc := fmt.Sprintf("%s %s via %s -> %d", j.key, compact(body, "name", "target_url"), via, code)
	if err != nil || code != http.StatusCreated {
		s.violate("api", "create %s: HTTP %d %v", desc, code, err)
		j.deleted = true // unknown: left out of every check
		s.logOp(kind, desc)
		return
	}
	j.id = out.ID
	s.byID[j.id] = j
	j.versions = append(j.versions, version{sent: sent, recv: recv, st: s.stateOf(&out)})
	s.logOp(kind, fmt.Sprintf("%s id %d (%s; max_retries %d)", desc, j.id, j.behave, j.maxRetries))
}

// policies adds random scheduling policies to a cron job's create body:
// misfire, jitter, a starting deadline, a window (starts_at, ends_at) or
// an exclusion of today (never both: an exclusion of today with an end
// within it leaves no occurrence, which the API refuses).
func (s *seqRun) policies(body map[string]any, gap int) {
	body["misfire"] = modelMisfires[s.rng.IntN(len(modelMisfires))]
	// The API keeps jitter below the schedule's shortest gap, so that it
	// never reorders occurrences.
	if jitter := 1 + s.rng.IntN(2); s.rng.IntN(5) < 2 && jitter < gap {
		body["jitter_seconds"] = jitter
	}
	if s.rng.IntN(10) < 3 {
		body["starting_deadline_seconds"] = 1 + s.rng.IntN(3)
	}
	switch r := s.rng.IntN(100); {
	case r < 15:
		body["starts_at"] = s.wholeSecondAhead(1000, 3000).Format(time.RFC3339)
	case r < 30:
		body["ends_at"] = s.wholeSecondAhead(6000, 14000).Format(time.RFC3339)
	case r < 40:
		body["starts_at"] = s.wholeSecondAhead(1000, 3000).Format(time.RFC3339)
		body["ends_at"] = s.wholeSecondAhead(6000, 14000).Format(time.RFC3339)
	case r < 50:
		body["exclude"] = []chronos.DateRange{today(body["timezone"].(string))}
	}
}

// cronGap is the gap in seconds between two occurrences of one of
// modelCrons.
func cronGap(expr string) int {
	switch {
	case strings.HasPrefix(expr, "*/2 "):
		return 2
	case strings.HasPrefix(expr, "*/3 "):
		return 3
	}
	return 1
}

// modelMisfires are the misfire policies a job may get.
var modelMisfires = []string{"one", "one", "none", "all", "all"}

// wholeSecondAhead is a whole second minMS to minMS+spanMS milliseconds
// from now.
func (s *seqRun) wholeSecondAhead(minMS, spanMS int) time.Time {
	d := time.Duration(minMS+s.rng.IntN(spanMS)) * time.Millisecond
	return time.Now().Add(d).Truncate(time.Second).UTC()
}

// today is the date range of the current day in zone tz.
func today(tz string) chronos.DateRange {
	loc, err := chronos.LoadTimezone(tz)
	if err != nil {
		loc = time.UTC
	}
	d := time.Now().In(loc).Format("2006-01-02")
	return chronos.DateRange{From: d, To: d}
}

// patchPolicy PATCHes one scheduling policy of a job: jitter, exclusions,
// the window, misfire or the starting deadline (kinds named after the
// field). Each body is valid for the job as the model knows it.
func (s *seqRun) patchPolicy() {
	kind := []string{"jitter", "exclude", "window", "misfire", "deadline"}[s.rng.IntN(5)]
	jitter, deadline := s.rng.IntN(3), 1+s.rng.IntN(3)
	noDeadline, misfire := s.rng.IntN(3) == 0, modelMisfires[s.rng.IntN(len(modelMisfires))]
	clear, window := s.rng.IntN(3) == 0, s.rng.IntN(3)
	starts, ends := s.wholeSecondAhead(1000, 3000), s.wholeSecondAhead(6000, 14000)
	j := s.pickJob(func(j *mjob) bool { return j.cur().Cron != "" })
	if j == nil {
		s.logOp(kind, "no cron job")
		return
	}
	body := map[string]any{}
	switch kind {
	case "jitter":
		body["jitter_seconds"] = min(jitter, cronGap(j.cur().Cron)-1)
	case "deadline":
		body["starting_deadline_seconds"] = deadline
		if noDeadline {
			body["starting_deadline_seconds"] = nil
		}
	case "misfire":
		body["misfire"] = misfire
	case "exclude":
		body["exclude"] = []chronos.DateRange{today(j.cur().TZ)}
		if clear || len(j.cur().Exclude) > 0 {
			body["exclude"] = []chronos.DateRange{}
		}
		if j.cur().EndsAt != nil {
			body["ends_at"] = nil // an end within an excluded today would leave no occurrence
		}
	case "window":
		body["starts_at"], body["ends_at"] = nil, nil
		switch window {
		case 0:
			body["starts_at"] = starts.Format(time.RFC3339)
		case 1:
			body["ends_at"] = ends.Format(time.RFC3339)
		}
		if len(j.cur().Exclude) > 0 {
			body["exclude"] = []chronos.DateRange{}
		}
		if len(j.cur().Cals) > 0 && window == 1 {
			body["calendars"] = nil // likewise an end within a day its calendars take
		}
	}
	s.patch(kind, j, body)
}

// patch sends a PATCH and records the job's new version from the answer.
func (s *seqRun) patch(kind string, j *mjob, body map[string]any) {
	var out chronos.Job
	code, sent, recv, via, err := s.call(http.MethodPatch, fmt.Sprintf("/v1/jobs/%d", j.id), body, &out)
	desc := fmt.Sprintf("%s %s via %s -> %d", j.key, compact(body), via, code)
	switch {
	case err != nil:
		s.violate("api", "PATCH %s: %v", desc, err)
		j.uncertain = true
	case code == http.StatusOK:
		j.versions = append(j.versions, version{sent: sent, recv: recv, st: s.stateOf(&out)})
		desc += " " + s.stateOf(&out).String()
		// A paused job shows no next run; resuming a cron job starts from
		// the first occurrence after now (issue 11, point 6).
		switch {
		case !out.Enabled && out.NextRunAt != nil:
			s.violate("next-run-at", "PATCH %s: the paused job shows next_run_at %s", desc, out.NextRunAt.Format("15:04:05.000"))
		case kind == "resume" && out.CronExpr != nil && (out.NextRunAt == nil || !out.NextRunAt.After(sent.Add(-modelTol))) &&
			s.stateOf(&out).occurrences(recv, recv.Add(time.Hour)) != nil: // past ends_at: finished, rightly no next run
			s.violate("next-run-at", "PATCH %s: the resumed cron job shows next_run_at %v, not after the resume", desc, out.NextRunAt)
		}
	case code == http.StatusBadRequest && j.cur().Cron != "" && (j.cur().occurrences(sent, sent.Add(time.Hour)) == nil ||
		withCron(j.cur(), body).occurrences(sent, sent.Add(time.Hour)) == nil):
		// Past its ends_at a cron job has no occurrence left, and the API
		// refuses an edit that leaves none (issue 16's validation): the
		// model's PATCH was valid when drawn, the job finished since, or
		// the new schedule's next occurrence lies past ends_at.
		desc += " (no occurrence left before ends_at)"
	default:
		// Every PATCH the model sends is valid.
		s.violate("api", "PATCH %s: unexpected answer", desc)
	}
	s.logOp(kind, desc)
}

// withCron is st with the cron_expr of a PATCH body, if it has one.
func withCron(st jobState, body map[string]any) jobState {
	if c, ok := body["cron_expr"].(string); ok {
		st.Cron = c
	}
	return st
}

func (s *seqRun) pause() {
	if j := s.pickJob(func(j *mjob) bool { return j.cur().Enabled }); j != nil {
		s.patch("pause", j, map[string]any{"enabled": false})
		return
	}
	s.logOp("pause", "no enabled job")
}

func (s *seqRun) resume() {
	if j := s.pickJob(func(j *mjob) bool { return !j.cur().Enabled }); j != nil {
		s.patch("resume", j, map[string]any{"enabled": true})
		return
	}
	s.logOp("resume", "no paused job")
}

// toggle pauses and at once resumes a job, preferably a one-shot still
// ahead whose run was already created.
func (s *seqRun) toggle() {
	j := s.pickJob(func(j *mjob) bool { return j.cur().Enabled && j.cur().Cron == "" && s.recent(j) })
	if j == nil || s.rng.IntN(4) == 0 {
		j = s.pickJob(func(j *mjob) bool { return j.cur().Enabled })
	}
	if j == nil {
		s.logOp("toggle", "no enabled job")
		return
	}
	s.patch("toggle", j, map[string]any{"enabled": false})
	s.patch("toggle", j, map[string]any{"enabled": true})
}

func (s *seqRun) patchCron() {
	expr := modelCrons[s.rng.IntN(len(modelCrons))]
	if j := s.pickJob(func(j *mjob) bool { return j.cur().Cron != "" }); j != nil {
		body := map[string]any{"cron_expr": expr}
		if j.cur().Jitter >= cronGap(expr) {
			body["jitter_seconds"] = 0 // the API refuses a jitter as long as the new schedule's gap
		}
		s.patch("cron_expr", j, body)
		return
	}
	s.logOp("cron_expr", "no cron job")
}

func (s *seqRun) patchZone() {
	tz := modelZones[s.rng.IntN(len(modelZones))]
	j := s.pickJob(func(j *mjob) bool { return j.cur().Cron == "" && s.recent(j) })
	if j == nil || s.rng.IntN(2) == 0 {
		j = s.pickJob(func(*mjob) bool { return true })
	}
	if j == nil {
		s.logOp("zone", "no job")
		return
	}
	s.patch("zone", j, map[string]any{"timezone": tz})
}

func (s *seqRun) patchOverlap() {
	ov := s.overlap(s.rng.IntN(2) == 0)
	if j := s.pickJob(func(*mjob) bool { return true }); j != nil {
		s.patch("overlap", j, map[string]any{"overlap": ov})
		return
	}
	s.logOp("overlap", "no job")
}

func (s *seqRun) patchRunAt() {
	at := s.runAtAhead()
	if j := s.pickJob(func(j *mjob) bool { return j.cur().Cron == "" }); j != nil {
		s.patch("run_at", j, map[string]any{"run_at": at.Format(time.RFC3339)})
		return
	}
	s.logOp("run_at", "no one-shot job")
}

func (s *seqRun) trigger() {
	j := s.pickJob(func(*mjob) bool { return true })
	if j == nil {
		s.logOp("trigger", "no job")
		return
	}
	var r chronos.Run
	code, _, _, via, err := s.call(http.MethodPost, fmt.Sprintf("/v1/jobs/%d/trigger", j.id), nil, &r)
	if err != nil || code != http.StatusAccepted {
		s.violate("api", "trigger %s via %s: HTTP %d %v", j.key, via, code, err)
	} else {
		j.manual[r.ID] = "manual"
	}
	s.logOp("trigger", fmt.Sprintf("%s via %s -> %d run %d", j.key, via, code, r.ID))
}

// redrive sends round a dead run of a job whose target fails.
func (s *seqRun) redrive() {
	k := s.rng.IntN(1 << 20)
	j := s.pickJob(func(j *mjob) bool { return j.behave.fail != 0 })
	if j == nil {
		s.logOp("redrive", "no failing job")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var dead []int64
	rows, err := s.c.db.Pool.Query(ctx, `SELECT id FROM job_runs WHERE job_id = $1 AND status = 'dead' ORDER BY id`, j.id)
	if err == nil {
		for rows.Next() {
			var id int64
			if rows.Scan(&id) == nil {
				dead = append(dead, id)
			}
		}
		rows.Close()
	}
	if len(dead) == 0 {
		s.logOp("redrive", j.key+": no dead run yet")
		return
	}
	id := dead[k%len(dead)]
	var r chronos.Run
	code, _, _, via, err := s.call(http.MethodPost, fmt.Sprintf("/v1/runs/%d/redrive", id), nil, &r)
	switch {
	case err == nil && code == http.StatusAccepted:
		j.manual[r.ID] = "redrive"
	case err == nil && code == http.StatusConflict: // already being redriven
	default:
		s.violate("api", "redrive run %d of %s via %s: HTTP %d %v", id, j.key, via, code, err)
	}
	s.logOp("redrive", fmt.Sprintf("%s run %d via %s -> %d run %d", j.key, id, via, code, r.ID))
}

func (s *seqRun) remove() {
	j := s.pickJob(func(*mjob) bool { return true })
	if j == nil {
		s.logOp("delete", "no job")
		return
	}
	code, _, _, via, err := s.call(http.MethodDelete, fmt.Sprintf("/v1/jobs/%d", j.id), nil, nil)
	if err != nil || code != http.StatusNoContent {
		s.violate("api", "delete %s via %s: HTTP %d %v", j.key, via, code, err)
	}
	j.deleted = true
	s.logOp("delete", fmt.Sprintf("%s via %s -> %d", j.key, via, code))
}

// killLeader kills the leader with SIGKILL, waits for another instance to
// lead, and starts the victim again.
func (s *seqRun) killLeader() {
	s.lastEvent = s.nops
	name := s.c.waitLeader(s.t, 20*time.Second)
	in := s.c.inst(name)
	at := in.kill(s.t)
	s.noteStop(stopRec{who: name, at: at, signal: "SIGKILL", leader: true})
	next := waitNewLeader(s.t, s.c, name, 15*time.Second)
	took := time.Since(at)
	s.startInst(in)
	s.logOp("kill", fmt.Sprintf("kill -9 of leader %s; %s leads %s later; %s started again", name, next, took.Round(time.Millisecond), name))
}

// stallLeader freezes the leader (SIGSTOP) for 3 to 10 s and thaws it
// (SIGCONT): a leader alive, its lock held, that creates no run, which is
// what a loaded machine (a process or its database starved for seconds)
// does to a leader. Its jobs fall behind as if nobody led: a gap, handled
// by misfire (see leaderWorked).
func (s *seqRun) stallLeader() {
	s.lastEvent = s.nops
	d := time.Duration(3000+s.rng.IntN(7000)) * time.Millisecond
	name := s.c.waitLeader(s.t, 20*time.Second)
	in := s.c.inst(name)
	at := in.stall(s.t, d)
	s.noteStop(stopRec{who: name, at: at, signal: "SIGSTOP", leader: true, thawed: time.Now()})
	s.logOp("stall", fmt.Sprintf("leader %s frozen (SIGSTOP) for %s", name, d))
}

// restart stops an instance with SIGTERM (nothing of it may stay leased)
// and starts it again, with a clock skew when skewed says so.
func (s *seqRun) restart(in *instance, skew time.Duration, skewed bool) {
	s.lastEvent = s.nops
	leader, _ := s.c.leader(context.Background())
	at := in.term(s.t)
	s.noteStop(stopRec{who: in.id, at: at, signal: "SIGTERM", leader: leader == in.id})
	s.checkLeases(in.id)
	kind := "restart"
	if skewed {
		kind = "skew"
		env := slices.Clone(s.baseEnv[in.id])
		if skew != 0 {
			env = append(env, "CHRONOS_CLOCK_SKEW="+skew.String())
		}
		in.env = env
		s.skew[in.id] = skew
	}
	s.startInst(in)
	desc := fmt.Sprintf("SIGTERM %s (leader %v), started again", in.id, leader == in.id)
	if skewed {
		desc += fmt.Sprintf(" with CHRONOS_CLOCK_SKEW=%s", skew)
	}
	s.logOp(kind, desc)
}

// compact renders a request body for the log, without the given keys.
func compact(body map[string]any, drop ...string) string {
	m := map[string]any{}
	for k, v := range body {
		if !slices.Contains(drop, k) {
			m[k] = v
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Sprint(m)
	}
	return string(b)
}
