//go:build linux

package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/jackc/pgx/v5"
)

// The writes TestCrash makes besides creates and triggers, through the
// crashes: PATCHes, pauses and resumes of a few jobs (each job's writes
// one after another, so its final state is known), deletes, redrives of
// dead runs and triggers with an Idempotency-Key. Each is recorded with
// whether the API acknowledged it; after the crashes every acknowledged
// write must be in the database with its audit entry, and every
// acknowledged idempotency key must replay its first answer (the README's
// durability: "every write the API acknowledges ... is committed
// synchronously").

// editRec is one such write and what the API answered.
type editRec struct {
	kind    string // patch, pause, resume, delete, redrive, idem
	job     int64
	value   string // patch: the description written
	enabled bool   // pause/resume: the enabled value written
	run     int64  // redrive, idem: the run the answer named
	of      int64  // redrive: the run redriven
	key     string // idem: the Idempotency-Key
	acked   bool
	changed bool // pause/resume: acknowledged as a change of the state the previous acknowledged answer showed
	at      time.Time
}

// resumeCall is one call of the burst's bulk resume.
type resumeCall struct {
	ids   []int64
	acked bool
	at    time.Time
}

// crashEdits is the edit workload's state.
type crashEdits struct {
	mu      sync.Mutex
	recs    []editRec
	resumes []resumeCall
	edit    []int64 // jobs edited one write at a time
	doomed  []int64 // jobs deleted during the crashes
	dead    []int64 // dead runs to redrive
	seq     int
}

func (e *crashEdits) add(r editRec) {
	e.mu.Lock()
	e.recs = append(e.recs, r)
	e.mu.Unlock()
}

// deleteSent returns the jobs a delete was sent for, answered or not.
func (e *crashEdits) deleteSent() map[int64]bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[int64]bool{}
	for _, r := range e.recs {
		if r.kind == "delete" {
			out[r.job] = true
		}
	}
	return out
}

// failPrefix names the jobs whose target answers 500: their runs go dead
// (max_retries 0) and are redriven during the crashes.
const failPrefix = "fail-"

// createEditJobs creates the jobs of the edit workload (far-future
// one-shots: they never fire on their own) and the dead runs to redrive,
// before any fault.
func (r *crashRun) createEditJobs(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	make1 := func(name string, set func(map[string]any)) int64 {
		b := jobBody(name, r.tg.urlFor(name))
		b["run_at"] = "2099-01-01T00:00:00Z"
		if set != nil {
			set(b)
		}
		id, ok := r.create(ctx, b)
		if !ok {
			t.Fatalf("create %s before any fault: %v", name, r.fails)
		}
		return id
	}
	for i := range r.cfg.editJobs {
		r.ed.edit = append(r.ed.edit, make1(fmt.Sprintf("edit-%d", i), nil))
	}
	for i := range r.cfg.doomed {
		r.ed.doomed = append(r.ed.doomed, make1(fmt.Sprintf("doomed-%d", i), nil))
	}
	var fail []int64
	for i := range 2 {
		fail = append(fail, make1(fmt.Sprintf("%s%d", failPrefix, i), func(b map[string]any) { b["max_retries"] = 0 }))
	}
	for i := range r.cfg.redrives {
		var run chronos.Run
		code, err := r.send(ctx, http.MethodPost, fmt.Sprintf("/v1/jobs/%d/trigger", fail[i%len(fail)]), nil, &run)
		if err != nil || code != http.StatusAccepted {
			t.Fatalf("trigger a failing job before any fault: HTTP %d %v", code, err)
		}
		r.ed.dead = append(r.ed.dead, run.ID)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var dead int
		err := r.c.db.Pool.QueryRow(ctx, `SELECT count(*) FROM job_runs WHERE id = ANY($1) AND status = 'dead'`, r.ed.dead).Scan(&dead)
		if err == nil && dead == len(r.ed.dead) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d runs of the failing jobs dead after 30 s (err %v)", dead, len(r.ed.dead), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// editLoop runs the edit workload until ctx ends: every edit job gets a
// write every interval on average, one at a time (PATCH of its
// description, a pause or a resume); deletes, redrives and idempotent
// triggers go at the same pace.
func (r *crashRun) editLoop(ctx context.Context) {
	var wg sync.WaitGroup
	for _, id := range r.ed.edit {
		wg.Go(func() { r.editJob(ctx, id) })
	}
	wg.Go(func() {
		for _, id := range r.ed.doomed {
			if !pauseAbout(ctx, r.cfg.editEvery) {
				return
			}
			code, _ := r.send(ctx, http.MethodDelete, fmt.Sprintf("/v1/jobs/%d", id), nil, nil)
			r.ed.add(editRec{kind: "delete", job: id, acked: code == http.StatusNoContent, at: time.Now()})
		}
	})
	wg.Go(func() {
		for _, id := range r.ed.dead {
			if !pauseAbout(ctx, r.cfg.editEvery) {
				return
			}
			var run chronos.Run
			code, err := r.send(ctx, http.MethodPost, fmt.Sprintf("/v1/runs/%d/redrive", id), nil, &run)
			r.ed.add(editRec{kind: "redrive", of: id, run: run.ID, acked: err == nil && code == http.StatusAccepted, at: time.Now()})
		}
	})
	wg.Go(func() {
		for ctx.Err() == nil {
			if !pauseAbout(ctx, r.cfg.editEvery) {
				return
			}
			r.ed.mu.Lock()
			r.ed.seq++
			key := fmt.Sprintf("crash-idem-%d", r.ed.seq)
			r.ed.mu.Unlock()
			job := r.trigger[rand.IntN(len(r.trigger))]
			run, code, err := r.idemTrigger(ctx, job, key)
			acked := err == nil && code == http.StatusAccepted
			r.ed.add(editRec{kind: "idem", job: job, key: key, run: run, acked: acked, at: time.Now()})
			if acked {
				r.mu.Lock()
				r.triggered = append(r.triggered, triggerRec{Job: job, Run: run, At: time.Now()})
				r.mu.Unlock()
			}
		}
	})
	wg.Wait()
}

// editJob writes to one job, one write at a time, until ctx ends.
func (r *crashRun) editJob(ctx context.Context, id int64) {
	enabled, known := true, true // the state the last acknowledged answer showed
	for n := 0; ctx.Err() == nil; n++ {
		if !pauseAbout(ctx, r.cfg.editEvery) {
			return
		}
		rec := editRec{job: id}
		body := map[string]any{}
		if n%3 == 2 {
			rec.kind, rec.enabled = "pause", false
			if !enabled {
				rec.kind, rec.enabled = "resume", true
			}
			body["enabled"] = rec.enabled
		} else {
			rec.kind = "patch"
			rec.value = fmt.Sprintf("edit %d of job %d", n, id)
			body["description"] = rec.value
		}
		var j chronos.Job
		code, err := r.send(ctx, http.MethodPatch, fmt.Sprintf("/v1/jobs/%d", id), body, &j)
		rec.acked, rec.at = err == nil && code == http.StatusOK, time.Now()
		switch {
		case rec.acked:
			rec.changed = (rec.kind == "pause" || rec.kind == "resume") && known && enabled != j.Enabled
			enabled, known = j.Enabled, true
		case rec.kind != "patch":
			known = false // it may have been applied or not
			enabled = rec.enabled
		}
		r.ed.add(rec)
	}
}

// idemTrigger triggers job with an Idempotency-Key and returns the run
// the answer names.
func (r *crashRun) idemTrigger(ctx context.Context, job int64, key string) (int64, int, error) {
	live := r.c.live()
	if len(live) == 0 {
		return 0, 0, fmt.Errorf("no live instance")
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, live[0].url(fmt.Sprintf("/v1/jobs/%d/trigger", job)), nil)
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("Idempotency-Key", key)
	resp, err := r.c.client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, resp.StatusCode, err
	}
	var run chronos.Run
	if resp.StatusCode == http.StatusAccepted {
		if err := json.NewDecoder(bytes.NewReader(b)).Decode(&run); err != nil {
			return 0, resp.StatusCode, err
		}
	}
	return run.ID, resp.StatusCode, nil
}

// pauseAbout sleeps about d (uniformly 0.5d..1.5d), false when ctx ended.
func pauseAbout(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d/2 + rand.N(d))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// checkEdits checks the edit workload and the burst's resume calls after
// everything settled (see crashEdits).
func (r *crashRun) checkEdits(t *testing.T, ctx context.Context, f *crashFailures) string {
	t.Helper()
	r.ed.mu.Lock()
	recs := append([]editRec(nil), r.ed.recs...)
	resumes := append([]resumeCall(nil), r.ed.resumes...)
	r.ed.mu.Unlock()

	type audit struct {
		job    int64
		action string
		run    *int64
		desc   *string
	}
	audits := queryAll(t, ctx, r.c, "load audit", `SELECT job_id, action, run_id, COALESCE(creation::jsonb, changes)->'description'->>'after' FROM job_audit`,
		func(rows pgx.Rows) (a audit, err error) {
			return a, rows.Scan(&a.job, &a.action, &a.run, &a.desc)
		})
	has := func(job int64, action string, match func(audit) bool) int {
		n := 0
		for _, a := range audits {
			if a.job == job && a.action == action && (match == nil || match(a)) {
				n++
			}
		}
		return n
	}
	type jobNow struct {
		desc    string
		enabled bool
	}
	state := map[int64]jobNow{}
	eachRow(t, ctx, r.c, "load jobs", `SELECT id, coalesce(description, ''), enabled FROM jobs`, func(rows pgx.Rows) error {
		var id int64
		var s jobNow
		err := rows.Scan(&id, &s.desc, &s.enabled)
		state[id] = s
		return err
	})
	type runNow struct {
		job     int64
		trigger string
		of      *int64
	}
	runs := map[int64]runNow{}
	eachRow(t, ctx, r.c, "load runs", `SELECT id, job_id, trigger, redrive_of FROM job_runs`, func(rows pgx.Rows) error {
		var id int64
		var x runNow
		err := rows.Scan(&id, &x.job, &x.trigger, &x.of)
		runs[id] = x
		return err
	})

	counts := map[string][2]int{} // kind -> acknowledged, not
	// Each edited job: its final description and enabled are those of its
	// last acknowledged write of each, or of a later unacknowledged one.
	byJob := map[int64][]editRec{}
	for _, e := range recs {
		c := counts[e.kind]
		if e.acked {
			c[0]++
		} else {
			c[1]++
		}
		counts[e.kind] = c
		byJob[e.job] = append(byJob[e.job], e)
	}
	for _, id := range r.ed.edit {
		now, ok := state[id]
		if !ok {
			f.add("acknowledged edit lost", "edited job %d is gone", id)
			continue
		}
		descOK, enOK := []string{""}, []bool{true}
		for _, e := range byJob[id] {
			switch {
			case e.kind == "patch" && e.acked:
				descOK = []string{e.value}
			case e.kind == "patch":
				descOK = append(descOK, e.value)
			case e.acked:
				enOK = []bool{e.enabled}
			default:
				enOK = append(enOK, e.enabled)
			}
			if e.acked && e.kind == "patch" && has(id, "update", func(a audit) bool { return a.desc != nil && *a.desc == e.value }) != 1 {
				f.add("audit entry lost", "job %d: the acknowledged PATCH of its description to %q (answered %s) has no audit entry", id, e.value, e.at.Format("15:04:05.000"))
			}
		}
		if !slices.Contains(descOK, now.desc) {
			f.add("acknowledged edit lost", "job %d: description %q, but the last acknowledged PATCH (or a later unanswered one) wrote one of %q", id, now.desc, descOK)
		}
		if !slices.Contains(enOK, now.enabled) {
			f.add("acknowledged pause/resume lost", "job %d: enabled %v, but the last acknowledged pause or resume (or a later unanswered one) set one of %v", id, now.enabled, enOK)
		}
		for _, action := range []string{"pause", "resume"} {
			want := 0
			for _, e := range byJob[id] {
				if e.kind == action && e.changed {
					want++
				}
			}
			if got := has(id, action, nil); got < want {
				f.add("audit entry lost", "job %d: %d audit entries %q, but %d acknowledged %ss changed the job", id, got, action, want, action)
			}
		}
	}
	for _, e := range recs {
		switch {
		case !e.acked:
		case e.kind == "delete":
			if _, there := state[e.job]; there {
				f.add("acknowledged delete lost", "job %d, deleted with 204 at %s, is in the database", e.job, e.at.Format("15:04:05.000"))
			}
			if has(e.job, "delete", nil) != 1 {
				f.add("audit entry lost", "job %d: the acknowledged delete has no audit entry", e.job)
			}
		case e.kind == "redrive":
			if x, ok := runs[e.run]; !ok || x.trigger != "redrive" || x.of == nil || *x.of != e.of {
				f.add("acknowledged redrive lost", "redrive of run %d, answered 202 with run %d at %s: that run is %+v", e.of, e.run, e.at.Format("15:04:05.000"), x)
			}
			if has(runs[e.of].job, "redrive", func(a audit) bool { return a.run != nil && *a.run == e.run }) != 1 {
				f.add("audit entry lost", "the acknowledged redrive of run %d (run %d) has no audit entry", e.of, e.run)
			}
		case e.kind == "idem":
			if has(e.job, "trigger", func(a audit) bool { return a.run != nil && *a.run == e.run }) != 1 {
				f.add("audit entry lost", "the acknowledged trigger of job %d (run %d) has no audit entry", e.job, e.run)
			}
		}
	}
	// Every acknowledged trigger has its audit entry (the idempotent ones
	// are among them).
	r.mu.Lock()
	triggered := append([]triggerRec(nil), r.triggered...)
	r.mu.Unlock()
	for _, tr := range triggered {
		if has(tr.Job, "trigger", func(a audit) bool { return a.run != nil && *a.run == tr.Run }) != 1 {
			f.add("audit entry lost", "the acknowledged trigger of job %d (run %d, answered %s) has no audit entry", tr.Job, tr.Run, tr.At.Format("15:04:05.000"))
		}
	}
	// An acknowledged idempotency key replays its first answer: the same
	// run, no second one.
	var replayed int
	for _, e := range recs {
		if e.kind != "idem" || !e.acked {
			continue
		}
		run, code, err := r.idemTrigger(ctx, e.job, e.key)
		replayed++
		if err != nil || code != http.StatusAccepted || run != e.run {
			f.add("idempotency record lost", "key %s: answered 202 with run %d at %s; replayed after the crashes: HTTP %d, run %d, %v",
				e.key, e.run, e.at.Format("15:04:05.000"), code, run, err)
		}
	}
	// The burst's resume calls: a job one acknowledged call resumed is
	// resumed (with its audit entry), and no later call resumes it again,
	// which is what a lost acknowledged resume looks like behind a retry.
	resumedBy := map[int64]int{}
	var ackedCalls, lostCalls int
	for i, c := range resumes {
		if !c.acked {
			lostCalls++
			continue
		}
		ackedCalls++
		for _, id := range c.ids {
			if prev, dup := resumedBy[id]; dup {
				f.add("acknowledged resume lost", "job %d was resumed by the call answered at %s and again by the call answered at %s: the first resume was lost",
					id, resumes[prev].at.Format("15:04:05.000"), c.at.Format("15:04:05.000"))
			}
			resumedBy[id] = i
			if s, ok := state[id]; ok && has(id, "resume", nil) < 1 {
				f.add("audit entry lost", "job %d (enabled %v): its acknowledged resume at %s has no audit entry", id, s.enabled, c.at.Format("15:04:05.000"))
			}
		}
	}
	var parts []string
	for _, k := range []string{"patch", "pause", "resume", "delete", "redrive", "idem"} {
		parts = append(parts, fmt.Sprintf("%s %d/%d", k, counts[k][0], counts[k][0]+counts[k][1]))
	}
	return fmt.Sprintf("edits acknowledged/sent: %s; idempotency keys replayed %d; burst resume calls %d acknowledged, %d unanswered, %d jobs resumed by acknowledged calls",
		strings.Join(parts, ", "), replayed, ackedCalls, lostCalls, len(resumedBy))
}
