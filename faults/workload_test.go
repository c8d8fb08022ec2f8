package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// workloadConfig is the mix of jobs a scenario runs.
type workloadConfig struct {
	crons    int           // every-second cron jobs
	oneShots int           // run_at jobs spread over the window
	triggers int           // jobs fired only by POST /trigger
	rate     int           // triggers per second during the window
	window   time.Duration // how long the scenario's fault phase lasts
}

// defaultWorkload is 200 jobs: a third every-second crons, the rest
// one-shots and trigger targets.
func defaultWorkload(window time.Duration) workloadConfig {
	return workloadConfig{crons: 60, oneShots: 70, triggers: 70, rate: 10, window: window}
}

// workload is the jobs of a scenario and what was done to them.
type workload struct {
	c        *cluster
	cfg      workloadConfig
	start    time.Time // when the first job was created
	created  time.Time // when the last job was created
	crons    []int64
	oneShots map[int64]time.Time // job -> run_at
	trigJobs []int64

	mu        sync.Mutex
	triggered []triggerRec
	trigFail  map[string]int // failed trigger requests by reason (expected during faults)
}

// triggerRec is one accepted POST /v1/jobs/{id}/trigger.
type triggerRec struct {
	Job, Run int64
	At       time.Time // when the request was sent
}

// jobBody is a job create body with fast retries, so a reclaimed run
// completes within the scenario.
func jobBody(name, targetURL string) map[string]any {
	return map[string]any{
		"name":                 name,
		"target_url":           targetURL,
		"max_retries":          6,
		"backoff":              "linear",
		"backoff_base_seconds": 0.5,
		"backoff_max_seconds":  2,
		"timeout_seconds":      60,
	}
}

// newWorkload creates the jobs, through the API, spread over the instances.
func newWorkload(t testing.TB, c *cluster, cfg workloadConfig) *workload {
	t.Helper()
	w := &workload{c: c, cfg: cfg, oneShots: map[int64]time.Time{}, trigFail: map[string]int{}}
	type spec struct {
		kind  string
		body  map[string]any
		runAt time.Time
	}
	var specs []spec
	w.start = time.Now()
	// One-shots fall inside the window, from 2 s after the jobs exist.
	first := w.start.Add(3 * time.Second).Truncate(time.Second)
	for i := range cfg.crons {
		b := jobBody(fmt.Sprintf("cron-%d", i), "")
		b["cron_expr"] = "*/1 * * * * *"
		specs = append(specs, spec{kind: "cron", body: b})
	}
	for i := range cfg.oneShots {
		at := first.Add(time.Duration(i) * cfg.window / time.Duration(max(cfg.oneShots, 1))).Truncate(time.Second)
		b := jobBody(fmt.Sprintf("once-%d", i), "")
		b["run_at"] = at.UTC().Format(time.RFC3339)
		specs = append(specs, spec{kind: "once", body: b, runAt: at})
	}
	for i := range cfg.triggers {
		b := jobBody(fmt.Sprintf("trig-%d", i), "")
		b["cron_expr"] = "0 0 0 1 1 *" // yearly: fired by hand only
		specs = append(specs, spec{kind: "trig", body: b})
	}
	// One batch request per sql.MaxJobBatch jobs (POST /v1/jobs/batch, all or
	// nothing): the scenario is about faults, not creates, and one at a
	// time the 200 jobs took seconds of a loaded test run.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for lo := 0; lo < len(specs); lo += sql.MaxJobBatch {
		part := specs[lo:min(lo+sql.MaxJobBatch, len(specs))]
		jobs := make([]any, len(part))
		for i, s := range part {
			s.body["target_url"] = c.target.srv.URL + "/hook"
			jobs[i] = s.body
		}
		var out struct {
			Jobs []chronos.Job `json:"jobs"`
		}
		code, err := c.api(ctx, http.MethodPost, "/v1/jobs/batch", map[string]any{"jobs": jobs}, &out)
		if err == nil && (code != http.StatusCreated || len(out.Jobs) != len(part)) {
			err = fmt.Errorf("HTTP %d, %d jobs created", code, len(out.Jobs))
		}
		if err != nil {
			t.Fatalf("create jobs %d to %d of %d: %v", lo, lo+len(part), len(specs), err)
		}
		for i, s := range part {
			switch j := out.Jobs[i]; s.kind {
			case "cron":
				w.crons = append(w.crons, j.ID)
			case "once":
				w.oneShots[j.ID] = s.runAt
			case "trig":
				w.trigJobs = append(w.trigJobs, j.ID)
			}
		}
	}
	w.created = time.Now()
	return w
}

// drive fires triggers at cfg.rate per second on random trigger jobs and
// instances until ctx ends.
func (w *workload) drive(ctx context.Context) {
	if w.cfg.rate <= 0 || len(w.trigJobs) == 0 {
		<-ctx.Done()
		return
	}
	every(ctx, w.cfg.rate, func(ctx context.Context) { w.trigger(ctx, w.trigJobs[rand.IntN(len(w.trigJobs))]) })
}

// trigger fires one job and records the run it was given.
func (w *workload) trigger(ctx context.Context, job int64) {
	r, at, code, err := w.c.trigger(ctx, job)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil || code != http.StatusAccepted {
		w.trigFail[failure(code, err)]++
		return
	}
	w.triggered = append(w.triggered, triggerRec{Job: job, Run: r.ID, At: at})
}

// failure says why an API request did not get the answer it wanted: the
// HTTP status of an error answer, or "no answer".
func failure(code int, err error) string {
	var se *serverError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("HTTP %d", se.code)
	case err != nil:
		return "no answer"
	}
	return fmt.Sprintf("HTTP %d", code)
}

// burst fires n triggers at once, spread over the live instances, with
// conc requests in flight at a time.
func (w *workload) burst(ctx context.Context, n, conc int) {
	var wg sync.WaitGroup
	next := make(chan int64)
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for job := range next {
				w.trigger(ctx, job)
			}
		}()
	}
	for i := range n {
		next <- w.trigJobs[i%len(w.trigJobs)]
	}
	close(next)
	wg.Wait()
}

// disableCrons stops every cron job (directly in the database, so no
// fault can get in the way): the window's schedule is then final.
func (w *workload) disableCrons(t testing.TB) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var at time.Time
	if err := w.c.db.Pool.QueryRow(ctx,
		`UPDATE jobs SET enabled = false WHERE id = ANY($1) RETURNING now()`, w.crons).Scan(&at); err != nil {
		t.Fatalf("disable cron jobs: %v", err)
	}
	return at
}
