package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chronoshq/chronos/internal/testmain"
)

// TestMain fails the package when any test leaves a goroutine behind.
func TestMain(m *testing.M) { testmain.Run(m) }

// binary builds the chronos binary (once per test process) and returns
// its path.
func binary(t *testing.T) string { return testmain.MustChronos(t, "../..") }

// cleanEnv is the test process's environment without any variable chronos
// reads, plus extra ("NAME=value").
func cleanEnv(extra ...string) []string {
	drop := map[string]bool{"CHRONOS_API_KEY": true, "CHRONOS_URL": true, "NO_COLOR": true}
	for _, v := range serveVars {
		drop[v.name] = true
	}
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !drop[name] {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// proc is a child process whose output is collected line by line.
type proc struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	stdout *lines
	stderr *lines
	done   chan struct{}
	err    error // of Wait, once done is closed
}

// startProc starts bin with args and env, and kills it at cleanup if it
// is still running; its output is logged when the test fails.
func startProc(t *testing.T, name, bin string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, stdout: newLines(), stderr: newLines(), done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = env
	p.cmd.Stdout = p.stdout
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("--- %s stdout:\n%s", name, p.stdout)
			t.Logf("--- %s stderr:\n%s", name, p.stderr)
		}
	})
	return p
}

// stop sends sig and returns the exit code, failing after timeout.
func (p *proc) stop(sig syscall.Signal, timeout time.Duration) int {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal %s: %v", p.name, err)
	}
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.t.Fatalf("%s did not exit within %s of %s", p.name, timeout, sig)
	}
	return p.cmd.ProcessState.ExitCode()
}

// lines is an io.Writer that keeps what is written as lines and lets a
// test wait for one matching a pattern.
type lines struct {
	mu      sync.Mutex
	partial bytes.Buffer
	all     []string
	changed chan struct{} // closed and replaced on every new line
}

func newLines() *lines { return &lines{changed: make(chan struct{})} }

func (l *lines) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial.Write(b)
	added := false
	for {
		line, err := l.partial.ReadString('\n')
		if err != nil { // no newline yet: keep the rest for later
			rest := line
			l.partial.Reset()
			l.partial.WriteString(rest)
			break
		}
		l.all = append(l.all, strings.TrimRight(line, "\n"))
		added = true
	}
	if added {
		close(l.changed)
		l.changed = make(chan struct{})
	}
	return len(b), nil
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.all, "\n") + l.partial.String()
}

// wait returns the submatches of the first line matching re, waiting up
// to timeout for it.
func (l *lines) wait(t *testing.T, re string, timeout time.Duration) []string {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	seen := 0
	for {
		l.mu.Lock()
		for ; seen < len(l.all); seen++ {
			if m := rx.FindStringSubmatch(l.all[seen]); m != nil {
				l.mu.Unlock()
				return m
			}
		}
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("no line matching %q within %s", re, timeout)
		}
	}
}

// execCommand is exec.CommandContext with the given environment.
func execCommand(ctx context.Context, bin string, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	return cmd
}

// runCmd runs the command in-process with the given environment and
// returns its exit code, stdout and stderr.
func runCmd(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &environ{stdout: &out, stderr: &errb, getenv: func(k string) string { return env[k] }}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := runMain(ctx, args, e)
	return code, out.String(), errb.String()
}

func TestHelp(t *testing.T) {
	t.Parallel()
	code, out, _ := runCmd(t, nil, "help")
	if code != 0 {
		t.Fatalf("chronos help: exit %d", code)
	}
	for _, c := range []string{"serve", "migrate", "tap", "receive", "version"} {
		if !strings.Contains(out, "  "+c+" ") {
			t.Errorf("chronos help does not list %s:\n%s", c, out)
		}
	}
	for name := range commands {
		code, out, errOut := runCmd(t, nil, name, "--help")
		if code != 0 || !strings.HasPrefix(out, "Usage: chronos "+name) {
			t.Errorf("chronos %s --help: exit %d, stdout %q, stderr %q", name, code, out, errOut)
		}
	}
	_, out, _ = runCmd(t, nil, "serve", "--help")
	for _, v := range serveVars {
		if !strings.Contains(out, v.name) {
			t.Errorf("serve --help does not document %s", v.name)
		}
	}
	if code, _, errOut := runCmd(t, nil, "nope"); code != 2 || !strings.Contains(errOut, `unknown command "nope"`) {
		t.Errorf("chronos nope: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := runCmd(t, nil, "tap", "--bogus"); code != 2 || !strings.Contains(errOut, "-bogus") {
		t.Errorf("chronos tap --bogus: exit %d, stderr %q", code, errOut)
	}
	if code, _, _ := runCmd(t, nil); code != 2 {
		t.Errorf("chronos without a command: exit %d, want 2", code)
	}
	if code, out, _ := runCmd(t, nil, "version"); code != 0 || !strings.HasPrefix(out, "chronos ") {
		t.Errorf("chronos version: exit %d, %q", code, out)
	}
}
