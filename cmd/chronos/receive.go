package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/reactor"
)

func init() {
	register(&command{name: "receive", summary: "run a local webhook receiver that prints every delivery", run: runReceive})
}

const (
	// receiveMaxBody is the most of a request body receive reads.
	receiveMaxBody = 1 << 20
	// receivePrintBody is the most of a body printed on the line.
	receivePrintBody = 300
	// signatureTolerance is how old X-Chronos-Timestamp may be: a replayed
	// request older than this is refused even with a valid signature.
	signatureTolerance = 5 * time.Minute
)

// receiver is the webhook target of `chronos receive`.
type receiver struct {
	secret    []byte
	status    int
	delay     time.Duration
	failFirst int
	color     bool
	out       io.Writer

	mu   sync.Mutex     // serialises lines on out and guards seen
	seen map[string]int // deliveries so far per X-Chronos-Run-Id, for --fail-first
}

func runReceive(ctx context.Context, args []string, env *environ) error {
	fs := newFlagSet(env, "receive", "[flags]", `Runs a webhook receiver for demos and debugging: point a job's target_url at
it (any path) and it prints each delivery on one line: run id, attempt,
scheduled time, signature check, the answer it gave, and the body.

With a secret (--secret or SIGNING_SECRET: the value the instances use, or
a job's own whsec_ secret) it verifies the Standard Webhooks signature
(webhook-id, webhook-timestamp, webhook-signature; or, from an older
chronos, X-Chronos-Signature) and answers 401 to a request whose signature
is bad, missing or older than 5 minutes, as a real target should.

--status, --delay and --fail-first make it misbehave on purpose, to watch
retries, backoff and dead letters; a path ending in /status/NNN (e.g.
http://localhost:9000/status/500) is answered with NNN whatever the flags.

Examples:
  chronos receive                          # answer 200 to everything
  chronos receive --status 500             # every attempt fails: run goes dead
  chronos receive --fail-first 2           # first 2 deliveries of each run fail
  chronos receive --delay 40s              # slower than the job's timeout`)
	addr := fs.String("addr", ":9000", "address to listen on")
	secret := fs.String("secret", env.getenv("SIGNING_SECRET"), "signing secret to verify deliveries with: SIGNING_SECRET's value or a job's whsec_ secret (env SIGNING_SECRET)")
	status := fs.Int("status", nethttp.StatusOK, "HTTP status to answer with")
	delay := fs.Duration("delay", 0, "wait this long before answering")
	failFirst := fs.Int("fail-first", 0, "answer 503 to the first N deliveries of each run, then --status")
	if err := fs.parse(args); err != nil {
		return err
	}
	if *status < 100 || *status > 599 {
		return usagef("receive: invalid --status %d: must be 100-599", *status)
	}
	if *delay < 0 || *failFirst < 0 {
		return usagef("receive: --delay and --fail-first must not be negative")
	}
	rc := &receiver{
		secret: []byte(*secret), status: *status, delay: *delay, failFirst: *failFirst,
		color: useColor(env), out: env.stdout, seen: map[string]int{},
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("receive: listen on %q: %w", *addr, err)
	}
	srv := &nethttp.Server{Handler: withHealthz(rc), ReadHeaderTimeout: 10 * time.Second}
	verify := "signatures not checked (no --secret)"
	if len(rc.secret) > 0 {
		verify = "verifying signatures"
	}
	fmt.Fprintf(env.stderr, "chronos receive: listening on %s (answers %d, %s)\n", listenURL(ln.Addr()), rc.status, verify)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("receive: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("receive: shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, nethttp.ErrServerClosed) {
		return fmt.Errorf("receive: %w", err)
	}
	return nil
}

// listenURL is the URL a listener can be reached at (localhost for a
// wildcard address).
func listenURL(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return "http://" + a.String()
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// ServeHTTP answers one delivery and prints it.
func (rc *receiver) ServeHTTP(w nethttp.ResponseWriter, r *nethttp.Request) {
	received := time.Now()
	body, err := io.ReadAll(io.LimitReader(r.Body, receiveMaxBody))
	if err != nil {
		nethttp.Error(w, "read body: "+err.Error(), nethttp.StatusBadRequest)
		return
	}
	runID := r.Header.Get(reactor.HeaderRunID)
	sig := rc.checkSignature(r, body, received)

	rc.mu.Lock()
	if len(rc.seen) > 100_000 { // a long demo: forget old runs rather than grow forever
		clear(rc.seen)
	}
	rc.seen[runID]++
	n := rc.seen[runID]
	rc.mu.Unlock()

	status, reason := rc.status, ""
	if code, ok := statusFromPath(r.URL.Path); ok {
		status = code
	}
	switch {
	case len(rc.secret) > 0 && sig != "ok":
		status, reason = nethttp.StatusUnauthorized, "signature "+sig
	case n <= rc.failFirst:
		status, reason = nethttp.StatusServiceUnavailable, fmt.Sprintf("--fail-first %d (delivery %d of this run)", rc.failFirst, n)
	case status < 200 || status > 299:
		reason = fmt.Sprintf("status %d asked for", status)
	}
	if rc.delay > 0 {
		select {
		case <-time.After(rc.delay):
		case <-r.Context().Done(): // the caller timed out or went away
		}
	}
	rc.print(r, runID, sig, status, body, received)
	if reason != "" {
		nethttp.Error(w, "chronos receive: failing on purpose: "+reason, status)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintln(w, "ok")
}

// statusFromPath reads the status a path asks for: /status/500 (or
// /anything/status/500) is answered with 500, like httpbin, so one
// receiver can play a healthy and a failing target at once.
func statusFromPath(path string) (int, bool) {
	i := strings.LastIndex(path, "/status/")
	if i < 0 {
		return 0, false
	}
	code, err := strconv.Atoi(strings.TrimSuffix(path[i+len("/status/"):], "/"))
	if err != nil || code < 200 || code > 599 {
		return 0, false
	}
	return code, true
}

// checkSignature says what the signature headers prove: "ok", "bad",
// "stale" (valid but too old), "absent" (no signature), or "unchecked"
// (no secret to check it with). A Standard Webhooks signature
// (webhook-signature) is checked with the convention's reference library;
// a delivery with only the legacy X-Chronos-Signature, the way chronos
// signed before, is checked the old way.
func (rc *receiver) checkSignature(r *nethttp.Request, body []byte, now time.Time) string {
	if r.Header.Get(reactor.HeaderWebhookSignature) != "" {
		return rc.checkWebhook(r, body, now)
	}
	sig := r.Header.Get(reactor.HeaderSignature)
	ts := r.Header.Get(reactor.HeaderTimestamp)
	switch {
	case len(rc.secret) == 0:
		if sig == "" {
			return "absent"
		}
		return "unchecked"
	case sig == "" || ts == "":
		return "absent"
	case !reactor.VerifySignature(rc.secret, ts, body, sig):
		return "bad"
	}
	return freshness(ts, now)
}

// checkWebhook verifies webhook-id, webhook-timestamp and
// webhook-signature with the secret (whsec_ or the plain SIGNING_SECRET).
func (rc *receiver) checkWebhook(r *nethttp.Request, body []byte, now time.Time) string {
	if len(rc.secret) == 0 {
		return "unchecked"
	}
	wh, err := standardwebhooks.NewWebhookRaw(chronos.SigningKey(string(rc.secret)))
	if err != nil {
		return "bad"
	}
	// The signature first, then its age: a forged old request is "bad".
	if err := wh.VerifyIgnoringTimestamp(body, r.Header); err != nil {
		if errors.Is(err, standardwebhooks.ErrRequiredHeaders) {
			return "absent"
		}
		return "bad"
	}
	return freshness(r.Header.Get(reactor.HeaderWebhookTimestamp), now)
}

// freshness is "ok" for a timestamp (unix seconds) within
// signatureTolerance of now, "stale" otherwise.
func freshness(ts string, now time.Time) string {
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return "bad"
	}
	if d := now.Sub(time.Unix(sec, 0)); d > signatureTolerance || d < -signatureTolerance {
		return "stale"
	}
	return "ok"
}

// print writes the delivery as one line.
func (rc *receiver) print(r *nethttp.Request, runID, sig string, status int, body []byte, at time.Time) {
	var b strings.Builder
	c := rc.color
	b.WriteString(paint(c, ansiDim, at.Local().Format("15:04:05.000")))
	fmt.Fprintf(&b, " %s %s", r.Method, r.URL.RequestURI())
	if runID == "" {
		runID = "-"
	}
	fmt.Fprintf(&b, " run=%s attempt=%s", runID, orDash(r.Header.Get(reactor.HeaderAttempt)))
	if s := r.Header.Get(reactor.HeaderScheduledAt); s != "" {
		fmt.Fprintf(&b, " scheduled=%s", s)
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			fmt.Fprintf(&b, " lag=%s", at.Sub(t).Round(time.Millisecond))
		}
	}
	sigColor := map[string]string{"ok": ansiGreen, "bad": ansiRed, "stale": ansiRed, "absent": ansiYellow}[sig]
	if len(rc.secret) == 0 && sig == "absent" {
		sigColor = ""
	}
	b.WriteString(" sig=" + paint(c, sigColor, sig))
	stColor := ansiGreen
	if status < 200 || status > 299 {
		stColor = ansiRed
	}
	b.WriteString(" -> " + paint(c, stColor, strconv.Itoa(status)))
	b.WriteString(" body=" + compactBody(body))
	rc.mu.Lock()
	defer rc.mu.Unlock()
	fmt.Fprintln(rc.out, b.String())
}

// compactBody renders a body on one line: compact JSON when it is JSON,
// quoted otherwise, cut at receivePrintBody bytes.
func compactBody(body []byte) string {
	if len(body) == 0 {
		return "(empty)"
	}
	var s string
	var buf bytes.Buffer
	if json.Compact(&buf, body) == nil {
		s = buf.String()
	} else {
		s = strconv.Quote(string(body))
	}
	if len(s) > receivePrintBody {
		s = s[:receivePrintBody] + fmt.Sprintf("... (%d bytes)", len(body))
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
