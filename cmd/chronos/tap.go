package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/chronoshq/chronos"
)

func init() {
	register(&command{name: "tap", summary: "print an instance's event stream (/v1/events), one event per line", run: runTap})
}

// Reconnection and liveness of the tap.
const (
	tapMinBackoff = 250 * time.Millisecond
	tapMaxBackoff = 5 * time.Second
	// tapIdleTimeout: the server sends a heartbeat every 15 s, so this much
	// silence means the connection is dead even if TCP has not noticed.
	tapIdleTimeout = 45 * time.Second
	// tapStable: a stream that lived this long resets the backoff.
	tapStable = 5 * time.Second
	// tapGiveUp is --give-up's default: how long the tap keeps trying while
	// no URL answers, long enough to ride out a restart (make dev restarts
	// a killed replica after 3 s; a rolling update takes a few seconds).
	tapGiveUp = 30 * time.Second
)

// tapOptions are the flags of `chronos tap`.
type tapOptions struct {
	urls  []string
	key   string
	job   string
	typ   string
	json  bool
	color bool
	// giveUp ends the tap with an error once no URL has answered for this
	// long (0: retry forever).
	giveUp time.Duration
}

func runTap(ctx context.Context, args []string, env *environ) error {
	fs := newFlagSet(env, "tap", "[flags]", `Connects to the event tap (GET /v1/events) of a Chronos instance and prints
every event one per line: time, type, job, run, status and details. Colour
is used when stdout is a terminal and NO_COLOR is not set. The tap shows
what the cluster changed (jobs, runs, leadership, seen by every instance
through LISTEN/NOTIFY) and what the instance itself did (claims, attempts,
materializing, reaping when it leads).

When the instance goes away the tap reconnects with backoff; give several
URLs (comma-separated) and it moves on to the next one. When none has
answered for --give-up (30s), it stops with exit code 1.

Examples:
  chronos tap --key dev-key
  chronos tap --key dev-key --url http://localhost:8080,http://localhost:8081
  chronos tap --key dev-key --job 3 --type run.attempted
  chronos tap --key dev-key --type leader.,listener. --json`)
	urls := fs.String("url", envOr(env, "CHRONOS_URL", "http://localhost:8080"), "instance base URL(s), comma-separated (env CHRONOS_URL)")
	key := fs.String("key", env.getenv("CHRONOS_API_KEY"), "API key (env CHRONOS_API_KEY)")
	job := fs.String("job", "", "only events of these job ids (comma-separated)")
	typ := fs.String("type", "", `only these event types (comma-separated; a prefix ends in ".", e.g. "run.")`)
	raw := fs.Bool("json", false, "print each event as its raw JSON")
	giveUp := fs.Duration("give-up", tapGiveUp, "stop when no URL has answered for this long (0: keep trying)")
	if err := fs.parse(args); err != nil {
		return err
	}
	if *giveUp < 0 {
		return usagef("tap: --give-up must not be negative")
	}
	// Checked here, before connecting: a typo is not the server's to find.
	for _, id := range strings.Split(*job, ",") {
		if id = strings.TrimSpace(id); *job != "" {
			if n, err := strconv.ParseInt(id, 10, 64); err != nil || n <= 0 {
				return usagef("tap: invalid --job %q: must be job ids, comma-separated (e.g. 3 or 3,7)", *job)
			}
		}
	}
	o := tapOptions{key: *key, job: *job, typ: *typ, json: *raw, giveUp: *giveUp}
	for _, u := range strings.Split(*urls, ",") {
		u = strings.TrimRight(strings.TrimSpace(u), "/")
		if u == "" {
			continue
		}
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return usagef("tap: invalid --url %q: must be http(s)://host:port", u)
		}
		o.urls = append(o.urls, u)
	}
	if len(o.urls) == 0 {
		return usagef("tap: --url is empty")
	}
	o.color = !o.json && useColor(env)
	return tap(ctx, o, env.stdout, env.stderr)
}

// tap streams events until ctx ends, reconnecting as needed. It returns nil
// on ctx's end, and an error for what retrying cannot fix (a refused key, a
// bad filter) or when no URL has answered for o.giveUp.
func tap(ctx context.Context, o tapOptions, stdout, stderr io.Writer) error {
	client := &nethttp.Client{Transport: &nethttp.Transport{
		Proxy:                 nethttp.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 15 * time.Second}).DialContext,
		ResponseHeaderTimeout: 10 * time.Second,
	}}
	defer client.CloseIdleConnections()
	out := bufio.NewWriter(stdout)
	backoff := tapMinBackoff
	lastAnswer := time.Now() // the last time a stream opened (or the start)
	for i := 0; ; i++ {
		u := o.urls[i%len(o.urls)]
		began := time.Now()
		answered, err := tapOnce(ctx, client, u, o, out, stderr)
		if ctx.Err() != nil {
			return nil
		}
		var fatal tapFatal
		if errors.As(err, &fatal) {
			return fatal.err
		}
		if answered {
			lastAnswer = time.Now()
		} else if o.giveUp > 0 && time.Since(lastAnswer) >= o.giveUp {
			return fmt.Errorf("tap: no instance answered for %s (last: %s: %v); giving up (--give-up)", o.giveUp, u, err)
		}
		if time.Since(began) > tapStable {
			backoff = tapMinBackoff
		}
		fmt.Fprintf(stderr, "chronos tap: %s: %v; reconnecting in %s\n", u, err, backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, tapMaxBackoff)
	}
}

// tapFatal is an error that reconnecting will not fix.
type tapFatal struct{ err error }

func (e tapFatal) Error() string { return e.err.Error() }

// tapOnce holds one event stream open and prints it; it always returns an
// error saying why the stream ended, and whether the stream opened (a 200:
// an instance that only answers 503 counts as unreachable).
func tapOnce(ctx context.Context, client *nethttp.Client, base string, o tapOptions, out *bufio.Writer, stderr io.Writer) (bool, error) {
	q := url.Values{}
	if o.job != "" {
		q.Set("job_id", o.job)
	}
	if o.typ != "" {
		q.Set("type", o.typ)
	}
	u := base + "/v1/events"
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := nethttp.NewRequestWithContext(ctx, nethttp.MethodGet, u, nil)
	if err != nil {
		return false, tapFatal{fmt.Errorf("tap: %w", err)}
	}
	req.Header.Set("Accept", "text/event-stream")
	if o.key != "" {
		req.Header.Set("Authorization", "Bearer "+o.key)
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, errors.Unwrap(err) // the *url.Error repeats the URL
	}
	defer resp.Body.Close()
	if resp.StatusCode != nethttp.StatusOK {
		msg := apiErrorMessage(resp)
		switch resp.StatusCode {
		case nethttp.StatusUnauthorized:
			return false, tapFatal{fmt.Errorf("tap: %s: 401 %s (pass --key or set CHRONOS_API_KEY)", base, msg)}
		case nethttp.StatusBadRequest:
			return false, tapFatal{usagef("tap: %s: %s", base, msg)}
		case nethttp.StatusNotFound:
			return false, tapFatal{fmt.Errorf("tap: %s: 404: is this a chronos instance?", base)}
		}
		return false, fmt.Errorf("%s %s", resp.Status, msg)
	}
	// Silence past tapIdleTimeout (no heartbeat) means a dead connection.
	idle := time.AfterFunc(tapIdleTimeout, func() { cancel(fmt.Errorf("no data for %s", tapIdleTimeout)) })
	defer idle.Stop()

	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var data strings.Builder
	for sc.Scan() {
		idle.Reset(tapIdleTimeout)
		line := sc.Text()
		switch {
		case line == "":
			if data.Len() > 0 {
				printTapEvent(out, data.String(), o)
				data.Reset()
				if err := out.Flush(); err != nil {
					return true, tapFatal{fmt.Errorf("tap: write: %w", err)}
				}
			}
		case strings.HasPrefix(line, ": chronos event tap"):
			fmt.Fprintf(stderr, "chronos tap: connected to %s (%s)\n", base, strings.TrimPrefix(line, ": chronos event tap, "))
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
		// "event:" repeats the type that the data carries; ":" lines are
		// heartbeats.
	}
	if err := context.Cause(ctx); err != nil {
		return true, err
	}
	if err := sc.Err(); err != nil {
		return true, err
	}
	return true, errors.New("stream closed by the instance")
}

// printTapEvent prints one event: raw with --json, else one human line.
func printTapEvent(out io.Writer, data string, o tapOptions) {
	if o.json {
		fmt.Fprintln(out, data)
		return
	}
	var e chronos.Event
	if err := json.Unmarshal([]byte(data), &e); err != nil {
		fmt.Fprintln(out, data) // not ours to judge: show it as it came
		return
	}
	fmt.Fprintln(out, formatEvent(e, o.color))
}

// apiErrorMessage reads the message of a Chronos error response, or the
// start of whatever body came back.
func apiErrorMessage(resp *nethttp.Response) string {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	return strings.TrimSpace(string(b))
}

// envOr returns the environment variable name, or def when it is unset.
func envOr(env *environ, name, def string) string {
	if v := env.getenv(name); v != "" {
		return v
	}
	return def
}

// useColor: stdout is a terminal, NO_COLOR is unset and TERM is not dumb.
func useColor(env *environ) bool {
	f, ok := env.stdout.(*os.File)
	return ok && isTerminal(f) && env.getenv("NO_COLOR") == "" && env.getenv("TERM") != "dumb"
}
