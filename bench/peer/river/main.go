// Command river-peer is the bench's side-by-side peer: River, the best Go
// Postgres queue, burning down the same work as chronos's burst scenario
// (one HTTP POST per job to the bench's local target), on the same server
// in the same run.
//
// It lives in a module of its own so that River stays out of chronos's
// go.mod; `chronos bench burst --peer river` builds it into a temporary
// directory and runs it. It talks to the bench over argv and stdout: the
// flags say what to do, and one JSON object on stdout says what happened.
//
// The burn-down, as River's own benchmark does it: N jobs are inserted
// (InsertManyFast, COPY) while no client works; then a client with the
// shipped batch fetch and completion, FetchCooldown 2 ms and 100 workers
// is started at instant T, and works until every job is completed.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// PostArgs is the one job kind: POST to a URL.
type PostArgs struct {
	URL string `json:"url"`
}

// Kind names the job kind.
func (PostArgs) Kind() string { return "bench_post" }

// postWorker sends each job's request and fails it on anything but 2xx.
type postWorker struct {
	river.WorkerDefaults[PostArgs]
	client *http.Client
}

func (w *postWorker) Work(ctx context.Context, job *river.Job[PostArgs]) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, job.Args.URL, nil)
	if err != nil {
		return err
	}
	// The bench's target reads the run id from this header.
	req.Header.Set("X-Chronos-Run-Id", strconv.FormatInt(job.ID, 10))
	resp, err := w.client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("target answered %d", resp.StatusCode)
	}
	return nil
}

// report is the JSON object printed on stdout.
type report struct {
	Jobs       int     `json:"jobs"`
	Workers    int     `json:"workers"`
	Version    string  `json:"version"`
	InsertMS   float64 `json:"insert_ms"`
	Start      string  `json:"start"`     // T: the client started (RFC 3339, ns)
	Completed  string  `json:"completed"` // the last completion event
	BurnMS     float64 `json:"burn_ms"`   // T → the last completion
	JobsPerSec float64 `json:"jobs_per_s"`
	Failed     int     `json:"failed"`
	// CPUMS is this process's CPU time (user and system) from T to the
	// last completion: River's own share of the burn-down, which the bench
	// sets beside Postgres's and its target's.
	CPUMS float64 `json:"cpu_ms"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "river-peer:", err)
		os.Exit(1)
	}
}

func run() error {
	dsn := flag.String("dsn", "", "Postgres URL (River's tables are created in it)")
	jobs := flag.Int("jobs", 20000, "jobs to burn down")
	target := flag.String("target", "", "URL each job POSTs to")
	workers := flag.Int("workers", 100, "River workers (MaxWorkers of the queue)")
	cooldown := flag.Duration("fetch-cooldown", 2*time.Millisecond, "River's FetchCooldown")
	timeout := flag.Duration("timeout", 5*time.Minute, "give up after")
	flag.Parse()
	if *dsn == "" || *target == "" || *jobs < 1 {
		return errors.New("-dsn, -target and -jobs are required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	cfg, err := pgxpool.ParseConfig(*dsn)
	if err != nil {
		return fmt.Errorf("parse dsn: %w", err)
	}
	cfg.MaxConns = 20
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// River's migrator logs each migration at info: the bench's output is
	// for figures.
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: logger})
	if err != nil {
		return fmt.Errorf("migrator: %w", err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}

	w := river.NewWorkers()
	river.AddWorker(w, &postWorker{client: &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConns: *workers, MaxIdleConnsPerHost: *workers, IdleConnTimeout: time.Minute},
	}})
	client, err := river.NewClient(driver, &river.Config{
		Queues:        map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: *workers}},
		FetchCooldown: *cooldown,
		Workers:       w,
		Logger:        logger,
	})
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}

	t0 := time.Now()
	const chunk = 5000
	for done := 0; done < *jobs; done += chunk {
		params := make([]river.InsertManyParams, 0, min(chunk, *jobs-done))
		for range cap(params) {
			params = append(params, river.InsertManyParams{Args: PostArgs{URL: *target}, InsertOpts: &river.InsertOpts{MaxAttempts: 1}})
		}
		if _, err := client.InsertManyFast(ctx, params); err != nil {
			return fmt.Errorf("insert: %w", err)
		}
	}
	inserted := time.Since(t0)

	// A buffer for every job: an event dropped would never be counted.
	events, unsubscribe := client.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: *jobs + 1000, Kinds: []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed}})
	defer unsubscribe()
	start := time.Now()
	cpu0, err := processCPU()
	if err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	var completed, failed int
	var last time.Time
	for completed+failed < *jobs {
		select {
		case ev := <-events:
			last = time.Now()
			if ev.Kind == river.EventKindJobCompleted {
				completed++
			} else {
				failed++
			}
		case <-ctx.Done():
			return fmt.Errorf("%d of %d jobs done after %s: %w", completed+failed, *jobs, time.Since(start), ctx.Err())
		}
	}
	cpu1, err := processCPU()
	if err != nil {
		return err
	}
	stopCtx, stopCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer stopCancel()
	if err := client.Stop(stopCtx); err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	burn := last.Sub(start)
	return json.NewEncoder(os.Stdout).Encode(report{
		Jobs: *jobs, Workers: *workers, Version: "v0.51.2", InsertMS: ms(inserted),
		Start: start.UTC().Format(time.RFC3339Nano), Completed: last.UTC().Format(time.RFC3339Nano),
		BurnMS: ms(burn), JobsPerSec: float64(*jobs) / burn.Seconds(), Failed: failed, CPUMS: ms(cpu1 - cpu0),
	})
}

// processCPU is the CPU time this process has used so far.
func processCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
