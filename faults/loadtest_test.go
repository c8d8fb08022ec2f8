package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
)

// TestAPILoad runs 200 concurrent clients against two instances, mixing
// creates, patches, lists and triggers: no request may get a 5xx, and
// every acknowledged write must be readable afterwards, from the other
// instance.
func TestAPILoad(t *testing.T) {
	cfg := defaultClusterConfig()
	cfg.instances = 2
	c := newCluster(t, cfg)
	const clients = 200
	dur := pick(5*time.Second, 10*time.Second, 30*time.Second)

	var (
		ops       [4]atomic.Int64 // create, patch, list, trigger
		fivexx    atomic.Int64
		noAnswer  atomic.Int64
		mu        sync.Mutex
		firstErrs []string
		lat       []time.Duration
	)
	note := func(err error) {
		var se *serverError
		if errors.As(err, &se) {
			fivexx.Add(1)
		} else {
			noAnswer.Add(1)
		}
		mu.Lock()
		if len(firstErrs) < 5 {
			firstErrs = append(firstErrs, err.Error())
		}
		mu.Unlock()
	}

	// What each client knows it wrote: its jobs' names as last
	// acknowledged (or in doubt, when a patch got no answer), and the
	// runs its triggers were given.
	type jobState struct {
		id      int64
		name    string
		inDoubt []string // names sent by patches that got no answer
	}
	type clientState struct {
		jobs []*jobState
		runs []int64
	}
	states := make([]*clientState, clients)
	insts := c.insts
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	var wg sync.WaitGroup
	for i := range clients {
		st := &clientState{}
		states[i] = st
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 42))
			for n := 0; ctx.Err() == nil; n++ {
				in := insts[rng.IntN(len(insts))]
				rctx, rcancel := context.WithTimeout(context.Background(), 20*time.Second)
				start := time.Now()
				var op int
				var err error
				switch p := rng.IntN(10); {
				case p < 3 || len(st.jobs) == 0: // create
					op = 0
					name := fmt.Sprintf("load-%d-%d", i, n)
					b := jobBody(name, c.target.srv.URL+"/hook")
					b["cron_expr"] = "0 0 0 1 1 *"
					var j chronos.Job
					var code int
					code, err = c.apiOn(rctx, in, http.MethodPost, "/v1/jobs", b, &j)
					if err == nil && code != http.StatusCreated {
						err = fmt.Errorf("create: HTTP %d", code)
					}
					if err == nil {
						st.jobs = append(st.jobs, &jobState{id: j.ID, name: name})
					}
				case p < 5: // patch one of this client's jobs
					op = 1
					js := st.jobs[rng.IntN(len(st.jobs))]
					name := fmt.Sprintf("load-%d-%d-patched", i, n)
					var code int
					code, err = c.apiOn(rctx, in, http.MethodPatch, fmt.Sprintf("/v1/jobs/%d", js.id),
						map[string]any{"name": name, "payload": map[string]int{"n": n}}, nil)
					switch {
					case err == nil && code == http.StatusOK:
						js.name, js.inDoubt = name, nil
					case err == nil:
						err = fmt.Errorf("patch: HTTP %d", code)
					default:
						js.inDoubt = append(js.inDoubt, name)
					}
				case p < 8: // list: a page or two of jobs, or a job's runs
					op = 2
					var code int
					if rng.IntN(2) == 0 {
						var page struct {
							NextCursor *string `json:"next_cursor"`
						}
						code, err = c.apiOn(rctx, in, http.MethodGet, fmt.Sprintf("/v1/jobs?limit=%d", 1+rng.IntN(100)), nil, &page)
						if err == nil && code == http.StatusOK && page.NextCursor != nil {
							code, err = c.apiOn(rctx, in, http.MethodGet, "/v1/jobs?cursor="+*page.NextCursor, nil, nil)
						}
					} else {
						js := st.jobs[rng.IntN(len(st.jobs))]
						code, err = c.apiOn(rctx, in, http.MethodGet, fmt.Sprintf("/v1/jobs/%d/runs?limit=20", js.id), nil, nil)
					}
					if err == nil && code != http.StatusOK {
						err = fmt.Errorf("list: HTTP %d", code)
					}
				default: // trigger
					op = 3
					js := st.jobs[rng.IntN(len(st.jobs))]
					var r chronos.Run
					var code int
					code, err = c.apiOn(rctx, in, http.MethodPost, fmt.Sprintf("/v1/jobs/%d/trigger", js.id), nil, &r)
					if err == nil && code != http.StatusAccepted {
						err = fmt.Errorf("trigger: HTTP %d", code)
					}
					if err == nil {
						st.runs = append(st.runs, r.ID)
					}
				}
				rcancel()
				ops[op].Add(1)
				if err != nil {
					note(err)
				}
				mu.Lock()
				lat = append(lat, time.Since(start))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()

	// Every acknowledged write is there, read through the other instance
	// (16 readers at a time).
	var created, runs, lost atomic.Int64
	rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer rcancel()
	reader := insts[len(insts)-1]
	checks := make(chan func())
	var rwg sync.WaitGroup
	for range 16 {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			for f := range checks {
				f()
			}
		}()
	}
	for _, st := range states {
		for _, js := range st.jobs {
			checks <- func() {
				created.Add(1)
				var j chronos.Job
				code, err := c.apiOn(rctx, reader, http.MethodGet, fmt.Sprintf("/v1/jobs/%d", js.id), nil, &j)
				if err != nil || code != http.StatusOK {
					lost.Add(1)
					t.Errorf("job %d (created with 201) reads as HTTP %d, %v", js.id, code, err)
					return
				}
				if j.Name != js.name && !slices.Contains(js.inDoubt, j.Name) {
					lost.Add(1)
					t.Errorf("job %d: name %q, want the last acknowledged %q", js.id, j.Name, js.name)
				}
			}
		}
		for _, id := range st.runs {
			checks <- func() {
				runs.Add(1)
				code, err := c.apiOn(rctx, reader, http.MethodGet, fmt.Sprintf("/v1/runs/%d", id), nil, nil)
				if err != nil || code != http.StatusOK {
					lost.Add(1)
					t.Errorf("run %d (triggered with 202) reads as HTTP %d, %v", id, code, err)
				}
			}
		}
	}
	close(checks)
	rwg.Wait()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	total := ops[0].Load() + ops[1].Load() + ops[2].Load() + ops[3].Load()
	t.Logf("API load: %d clients for %s on %d instances: %d requests (%.0f/s): %d creates, %d patches, %d lists, %d triggers",
		clients, dur, len(insts), total, float64(total)/dur.Seconds(), ops[0].Load(), ops[1].Load(), ops[2].Load(), ops[3].Load())
	t.Logf("latency p50 %s p99 %s max %s; 5xx %d; no answer %d; verified %d jobs and %d runs afterwards, %d lost; first errors %q",
		pct(lat, 0.5), pct(lat, 0.99), pct(lat, 1), fivexx.Load(), noAnswer.Load(), created.Load(), runs.Load(), lost.Load(), firstErrs)
	if n := fivexx.Load(); n > 0 {
		t.Errorf("%d requests got a 5xx", n)
	}
}
