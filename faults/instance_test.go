package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// instance is one `chronos serve` process, restartable. Its address
// changes with every start (HTTP_ADDR=127.0.0.1:0, read back from the
// "chronos started" log line), so nothing races for a port.
type instance struct {
	id  string
	c   *cluster
	env []string
	bin string // the chronos binary; "": chronosBinary (this tree's)

	mu      sync.Mutex
	cmd     *exec.Cmd
	addr    string        // "" while down
	exited  chan struct{} // closed when the current process has been waited for
	exitErr error
	starts  int
	logs    *logSink
}

// logSink is an instance's stderr/stdout: it keeps the recent lines for a
// failure report, picks out the listening address and the leadership
// intervals, and notices data races.
type logSink struct {
	inst *instance
	mu   sync.Mutex
	buf  []byte
	tail []string
	addr chan string
	once sync.Once

	races  int
	errors []string
}

const keepLines = 400

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	s.buf = append(s.buf, p...)
	var lines []string
	for {
		i := bytes.IndexByte(s.buf, '\n')
		if i < 0 {
			break
		}
		lines = append(lines, string(s.buf[:i]))
		s.buf = s.buf[i+1:]
	}
	s.mu.Unlock()
	for _, l := range lines {
		s.line(l)
	}
	return len(p), nil
}

// logLine is the part of a JSON log line the suite reads.
type logLine struct {
	Time  time.Time `json:"time"`
	Level string    `json:"level"`
	Msg   string    `json:"msg"`
	Addr  string    `json:"addr"`
}

func (s *logSink) line(l string) {
	if strings.Contains(l, `"msg":"http request"`) && !strings.Contains(l, `"status":5`) {
		return // one per request: noise, unless it is a 5xx
	}
	s.mu.Lock()
	s.tail = append(s.tail, l)
	if len(s.tail) > keepLines {
		s.tail = s.tail[len(s.tail)-keepLines:]
	}
	if strings.Contains(l, "WARNING: DATA RACE") {
		s.races++
	}
	s.mu.Unlock()
	var ll logLine
	if !strings.Contains(l, `"msg":"chronos started"`) && !strings.Contains(l, `"msg":"leader work `) &&
		!strings.Contains(l, `"level":"ERROR"`) {
		return
	}
	if !strings.HasPrefix(l, "{") || json.Unmarshal([]byte(l), &ll) != nil {
		return
	}
	switch ll.Msg {
	case "chronos started":
		s.once.Do(func() { s.addr <- ll.Addr })
	case "leader work starting":
		s.inst.c.leaders.start(s.inst.id, ll.Time)
	case "leader work stopped":
		s.inst.c.leaders.stop(s.inst.id, ll.Time)
	}
	if ll.Level == "ERROR" && ll.Msg != "http request" {
		s.mu.Lock()
		s.errors = append(s.errors, l)
		s.mu.Unlock()
	}
}

func (s *logSink) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.tail...)
}

// logLines is the kept tail of the log of the instance's current process,
// and false when it has none.
func (in *instance) logLines() ([]string, bool) {
	in.mu.Lock()
	sink := in.logs
	in.mu.Unlock()
	if sink == nil {
		return nil, false
	}
	return sink.lines(), true
}

// start launches the process and waits until it serves HTTP.
func (in *instance) start(t testing.TB) {
	t.Helper()
	in.awaitUp(t, in.launch(t))
}

// launching is an instance's process started and not yet known to serve:
// its log sink (which learns the HTTP address) and the channel closed
// when it exits.
type launching struct {
	sink   *logSink
	exited chan struct{}
}

// launch starts the instance's process and returns at once: a cluster
// launches every instance before it waits for any (awaitUp), so they
// boot side by side.
func (in *instance) launch(t testing.TB) launching {
	t.Helper()
	in.mu.Lock()
	if in.cmd != nil {
		in.mu.Unlock()
		t.Fatalf("instance %s: start while running", in.id)
	}
	in.starts++
	sink := &logSink{inst: in, addr: make(chan string, 1)}
	bin := in.bin
	if bin == "" {
		bin = chronosBinary(t)
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = in.env
	var out io.Writer = sink
	kept := keepLog(t, in.id, in.starts)
	if kept != nil {
		out = io.MultiWriter(sink, kept)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		in.mu.Unlock()
		t.Fatalf("instance %s: start: %v", in.id, err)
	}
	exited := make(chan struct{})
	in.cmd, in.exited, in.logs, in.exitErr = cmd, exited, sink, nil
	in.mu.Unlock()
	go func() {
		err := cmd.Wait() // returns after the output is copied
		if kept != nil {
			fmt.Fprintf(kept, "# exit: %v\n", err)
			kept.Close()
		}
		in.mu.Lock()
		in.exitErr = err
		in.addr = ""
		in.mu.Unlock()
		// A killed leader logs no "stopped": its work ended with it.
		in.c.leaders.stop(in.id, time.Now())
		close(exited)
	}()
	return launching{sink: sink, exited: exited}
}

// awaitUp waits until the launched process has an HTTP address and its
// /healthz answers OK.
func (in *instance) awaitUp(t testing.TB, l launching) {
	t.Helper()
	sink, exited := l.sink, l.exited
	select {
	case addr := <-sink.addr:
		in.mu.Lock()
		in.addr = addr
		in.mu.Unlock()
	case <-exited:
		t.Fatalf("instance %s exited at start: %v\n%s", in.id, in.exitErr, strings.Join(sink.lines(), "\n"))
	case <-time.After(60 * time.Second):
		t.Fatalf("instance %s did not start within 60 s\n%s", in.id, strings.Join(sink.lines(), "\n"))
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := in.c.client.Get(in.url("/healthz"))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance %s: /healthz not OK within 30 s: %v", in.id, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// keepLog opens the file that keeps the whole log of one process of an
// instance when FAULTS_LOG_DIR is set (the sink keeps only the last lines,
// and only a failure prints them): <dir>/<test>-<instance>-<start>.log.
func keepLog(t testing.TB, id string, start int) *os.File {
	dir := os.Getenv("FAULTS_LOG_DIR")
	if dir == "" {
		return nil
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%s-%d.log", name, id, start)))
	if err != nil {
		t.Logf("FAULTS_LOG_DIR: %v", err)
		return nil
	}
	return f
}

// url is the instance's address plus path ("" host when down: requests fail).
func (in *instance) url(path string) string {
	return "http://" + in.address() + path
}

func (in *instance) address() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.addr
}

func (in *instance) running() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.cmd != nil
}

// kill sends SIGKILL and waits for the process to be gone.
func (in *instance) kill(t testing.TB) time.Time {
	t.Helper()
	return in.signalAndWait(t, syscall.SIGKILL, 10*time.Second)
}

// term sends SIGTERM and waits for a clean exit (status 0).
func (in *instance) term(t testing.TB) time.Time {
	t.Helper()
	at := in.signalAndWait(t, syscall.SIGTERM, in.c.cfg.shutdownTimeout+20*time.Second)
	in.mu.Lock()
	err := in.exitErr
	in.mu.Unlock()
	if err != nil {
		t.Errorf("instance %s: exit after SIGTERM: %v (want status 0)\n%s", in.id, err, strings.Join(lastN(in.logs.lines(), 30), "\n"))
	}
	return at
}

// stall freezes the process (SIGSTOP) for d, then lets it go on
// (SIGCONT); it returns when the freeze began.
func (in *instance) stall(t testing.TB, d time.Duration) time.Time {
	t.Helper()
	in.mu.Lock()
	cmd := in.cmd
	in.mu.Unlock()
	if cmd == nil {
		t.Fatalf("instance %s: stall while down", in.id)
	}
	at := time.Now()
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("instance %s: SIGSTOP: %v", in.id, err)
	}
	time.Sleep(d)
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatalf("instance %s: SIGCONT: %v", in.id, err)
	}
	return at
}

// signalAndWait signals the process, waits for it to exit and returns the
// moment it was signalled.
func (in *instance) signalAndWait(t testing.TB, sig syscall.Signal, within time.Duration) time.Time {
	t.Helper()
	in.mu.Lock()
	cmd, exited := in.cmd, in.exited
	in.mu.Unlock()
	if cmd == nil {
		t.Fatalf("instance %s: signal %v while down", in.id, sig)
	}
	at := time.Now()
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("instance %s: signal %v: %v", in.id, sig, err)
	}
	if !awaitExit(exited, within, func() { _ = cmd.Process.Kill() }) {
		t.Errorf("instance %s did not exit within %s of %v; killed", in.id, within, sig)
	}
	in.mu.Lock()
	in.cmd = nil
	races := in.logs.races
	in.mu.Unlock()
	if races > 0 {
		t.Errorf("instance %s reported %d data race(s):\n%s", in.id, races, strings.Join(in.logs.lines(), "\n"))
	}
	return at
}

// stopQuietly ends the process at cleanup, whatever its state.
func (in *instance) stopQuietly() {
	in.mu.Lock()
	cmd, exited := in.cmd, in.exited
	in.cmd = nil
	in.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	awaitExit(exited, 15*time.Second, func() { _ = cmd.Process.Kill() })
}

// readyz is what the suite reads of GET /readyz.
type readyz struct {
	Status string `json:"status"`
	Leader struct {
		Self     bool   `json:"self"`
		Instance string `json:"instance"`
	} `json:"leader"`
}

func (in *instance) readyz(ctx context.Context) (readyz, error) {
	var r readyz
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, in.url("/readyz"), nil)
	if err != nil {
		return r, err
	}
	resp, err := in.c.client.Do(req)
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return r, fmt.Errorf("readyz: %w", err)
	}
	return r, nil
}

func lastN(s []string, n int) []string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
