//go:build linux

package faults

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
)

// createJobs creates the crons, the trigger jobs and the burst through
// the API.
func (r *crashRun) createJobs(t *testing.T) {
	t.Helper()
	type spec struct {
		body map[string]any
		kind string
	}
	var specs []spec
	add := func(name, kind string, set func(map[string]any)) {
		b := jobBody(name, r.tg.urlFor(name))
		set(b)
		specs = append(specs, spec{b, kind})
	}
	for i := range r.cfg.cronsAll {
		add(fmt.Sprintf("cron-all-%d", i), "cron", func(b map[string]any) { b["cron_expr"], b["misfire"] = "* * * * * *", "all" })
	}
	for i := range r.cfg.cronsOne {
		add(fmt.Sprintf("cron-one-%d", i), "cron", func(b map[string]any) { b["cron_expr"] = "* * * * * *" })
	}
	for i := range r.cfg.trigJobs {
		add(fmt.Sprintf("trig-%d", i), "trig", func(b map[string]any) { b["run_at"] = "2099-01-01T00:00:00Z" })
	}
	// The burst is created paused, due now, and resumed all at once
	// later (releaseBurst): a one-shot resumed past its run_at fires at
	// once, so the herd starts when the test says, however long creating
	// it took.
	due := time.Now().UTC().Format(time.RFC3339)
	for i := range r.cfg.burst {
		add(fmt.Sprintf("burst-%d", i), "burst", func(b map[string]any) {
			b["run_at"], b["enabled"], b["labels"] = due, false, map[string]string{"crash": burstLabel(i)}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	next := make(chan spec)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for s := range next {
				id, ok := r.create(ctx, s.body)
				if !ok {
					continue
				}
				r.mu.Lock()
				switch s.kind {
				case "cron":
					r.crons = append(r.crons, id)
				case "trig":
					r.trigger = append(r.trigger, id)
				}
				r.mu.Unlock()
			}
		})
	}
	for _, s := range specs {
		next <- s
	}
	close(next)
	wg.Wait()
	if n := len(r.acked); n != len(specs) {
		t.Fatalf("created %d of %d jobs before any fault: %v", n, len(specs), r.fails)
	}
}

// waitAcked waits until the API has acknowledged n triggers.
func (r *crashRun) waitAcked(t *testing.T, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		r.mu.Lock()
		got, fails := len(r.triggered), fmt.Sprint(r.fails)
		r.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d triggers acknowledged within %s (failures %s)", got, n, within, fails)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// burstLabel is the value of the label "crash" of the i-th burst job:
// one per thousand, the bulk resume's limit per call.
func burstLabel(i int) string { return fmt.Sprintf("burst-%d", i/1000) }

// releaseBurst resumes the burst, each thousand in a call of its own, all
// at once. The crash may catch some of these calls: each is repeated
// until acknowledged, as a client would, so every burst job runs in the
// end; a call cut off by the crash may have committed or not. Every call
// is recorded (the jobs it resumed, acknowledged or not), so the check
// sees a lost acknowledged batch that a later call resumed again.
func (r *crashRun) releaseBurst(ctx context.Context) {
	var wg sync.WaitGroup
	for g := range (r.cfg.burst + 999) / 1000 {
		wg.Go(func() {
			path := "/v1/jobs/resume?label=crash=" + burstLabel(g*1000)
			for ctx.Err() == nil {
				var res struct {
					More   bool    `json:"more"`
					JobIDs []int64 `json:"job_ids"`
				}
				code, err := r.send(ctx, http.MethodPost, path, nil, &res)
				r.ed.mu.Lock()
				r.ed.resumes = append(r.ed.resumes, resumeCall{ids: res.JobIDs, acked: err == nil && code == http.StatusOK, at: time.Now()})
				r.ed.mu.Unlock()
				if err == nil && code == http.StatusOK && !res.More {
					return
				}
				if err != nil || code != http.StatusOK {
					r.mu.Lock()
					r.fails[failReason("resume", code, err)]++
					r.mu.Unlock()
					time.Sleep(100 * time.Millisecond) // the server is down: try again shortly
				}
			}
		})
	}
	wg.Wait()
}

// releaseDone fails the test when the burst's release ran out of time
// (ctx is its context): the jobs it did not resume would otherwise show
// up later as one-shots that never ran.
func (r *crashRun) releaseDone(t *testing.T, ctx context.Context) {
	t.Helper()
	if ctx.Err() == nil {
		return
	}
	var paused int
	err := r.c.db.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM jobs WHERE name LIKE 'burst-%' AND NOT enabled`).Scan(&paused)
	r.mu.Lock()
	fails := maps.Clone(r.fails)
	r.mu.Unlock()
	r.c.dumpLogs(t, 40)
	t.Fatalf("the burst's release did not finish before its deadline: %d burst jobs still paused (err %v); requests not acknowledged: %v",
		paused, err, fails)
}

// create posts a job to one live instance, no retry elsewhere: an
// unanswered request is not acknowledged, whatever it did.
func (r *crashRun) create(ctx context.Context, body map[string]any) (int64, bool) {
	var j chronos.Job
	code, err := r.send(ctx, http.MethodPost, "/v1/jobs", body, &j)
	r.mu.Lock()
	defer r.mu.Unlock()
	if code != http.StatusCreated || err != nil {
		r.fails[failReason("create", code, err)]++
		return 0, false
	}
	r.acked[j.ID] = ackedJob{name: body["name"].(string), at: time.Now()}
	return j.ID, true
}

// createOne creates a one-shot job due at once.
func (r *crashRun) createOne(ctx context.Context) {
	r.mu.Lock()
	r.live++
	name := fmt.Sprintf("live-%d", r.live)
	r.mu.Unlock()
	b := jobBody(name, r.tg.urlFor(name))
	b["run_at"] = time.Now().UTC().Format(time.RFC3339)
	r.create(ctx, b)
}

// triggerOne triggers a random trigger job.
func (r *crashRun) triggerOne(ctx context.Context) {
	job := r.trigger[rand.IntN(len(r.trigger))]
	var run chronos.Run
	code, err := r.send(ctx, http.MethodPost, fmt.Sprintf("/v1/jobs/%d/trigger", job), nil, &run)
	r.mu.Lock()
	defer r.mu.Unlock()
	if code != http.StatusAccepted || err != nil {
		r.fails[failReason("trigger", code, err)]++
		return
	}
	r.triggered = append(r.triggered, triggerRec{Job: job, Run: run.ID, At: time.Now()})
}

// send makes one API request to a random live instance.
func (r *crashRun) send(ctx context.Context, method, path string, body, out any) (int, error) {
	live := r.c.live()
	if len(live) == 0 {
		return 0, errors.New("no live instance")
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return r.c.apiOn(rctx, live[0], method, path, body, out)
}

// failReason is failure, named for what was asked.
func failReason(what string, code int, err error) string { return what + ": " + failure(code, err) }
