package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chronoshq/chronos/sql/sqltest"
)

// The README's tour and the walkthrough run as written: make dev (the
// real scripts/dev.sh) in terminal 1, the tap in terminal 2, the rest in
// one shell (terminal 3). How a fenced block says which it is, and how a
// sample output is compared, is in docs/contributing.md ("The docs are
// tested").
const (
	readmePath      = "../../README.md"
	walkthroughPath = "../../docs/walkthrough.md"
	tourHeading     = "## A five-minute tour"
	// streamWait bounds how long a sample of terminal 1 or 2 may take to
	// show up (the first run of hello is up to five seconds away).
	streamWait = 30 * time.Second
	// blockWait bounds one shell block (the dead-letter waits loop).
	blockWait = 60 * time.Second
)

// docBlock is one fenced block of a page: its info string ("sh",
// "sh tap", "text dev", ...), its text and where it is.
type docBlock struct {
	info, text, where string
}

// docBlocks returns the fenced blocks of path, from the line starting
// with `from` (if any) to the next heading of the same level.
func docBlocks(t *testing.T, path, from string) []docBlock {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	start, level := 0, ""
	if from != "" {
		start = -1
		for i, l := range lines {
			if l == from {
				start, level = i+1, from[:strings.Index(from, " ")+1]
				break
			}
		}
		if start < 0 {
			t.Fatalf("%s has no %q", path, from)
		}
	}
	var out []docBlock
	var cur *docBlock
	for i := start; i < len(lines); i++ {
		l := lines[i]
		if cur == nil && level != "" && strings.HasPrefix(l, level) {
			break
		}
		switch {
		case cur == nil && strings.HasPrefix(l, "```"):
			cur = &docBlock{info: strings.TrimSpace(l[3:]), where: fmt.Sprintf("%s:%d", filepath.Base(path), i+1)}
		case cur != nil && l == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += l + "\n"
		}
	}
	return out
}

// sampleNorm rewrites what may differ between a sample and a real run:
// clock times, dates, durations, pids, database URLs, cursors, sizes, and
// runs of spaces.
var sampleNorm = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\x1b\[[0-9;]*m`), ""},
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`), "<time>"},
	{regexp.MustCompile(`\b\d\d:\d\d:\d\d\.\d{3}\b`), "<clock>"},
	{regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|us|ms|s|m|h)\b`), "<duration>"},
	{regexp.MustCompile(`\bpid \d+`), "pid <pid>"},
	{regexp.MustCompile(`postgres://\S+`), "<database>"},
	{regexp.MustCompile(`"next_cursor":"[^"]*"`), `"next_cursor":"<cursor>"`},
	{regexp.MustCompile(`--cursor \S+`), "--cursor <cursor>"},
	{regexp.MustCompile(`\(\d+ bytes\)`), "(<n> bytes)"},
	{regexp.MustCompile(`\s+`), " "},
}

func normSample(s string) string {
	for _, n := range sampleNorm {
		s = n.re.ReplaceAllString(s, n.with)
	}
	return strings.TrimSpace(s)
}

// runIDSlot finds the numbers of a sample that are run ids (or, "(id N)",
// the ids apply gives in parallel): they depend on how long hello has been
// firing, so a sample's run id stands for whatever the run printed, the
// same one wherever the sample repeats it. Numbers below 10 and every
// other number (job ids, attempts, counts, codes) must match exactly.
var runIDSlot = regexp.MustCompile(`(run=|run |"id": ?|"redrive_of": ?|^|^id |\(id )(\d+)\b`)

// sampleLine is one line of a sample as a pattern: the numbers it binds,
// in order of the pattern's groups.
type sampleLine struct {
	text  string
	re    *regexp.Regexp
	slots []string
}

func newSampleLine(line string) sampleLine {
	n := normSample(line)
	var pat strings.Builder
	var slots []string
	last := 0
	for _, m := range runIDSlot.FindAllStringSubmatchIndex(n, -1) {
		num := n[m[4]:m[5]]
		v, _ := strconv.Atoi(num)
		if v < 10 && n[m[2]:m[3]] != "(id " {
			continue
		}
		pat.WriteString(regexp.QuoteMeta(n[last:m[4]]))
		pat.WriteString(`(\d+)`)
		slots = append(slots, num)
		last = m[5]
	}
	pat.WriteString(regexp.QuoteMeta(n[last:]))
	// A sample line may stop early: what follows it in the real line
	// (a due_in, a truncated body) is not part of the promise.
	return sampleLine{text: line, re: regexp.MustCompile(`^` + pat.String()), slots: slots}
}

// match reports whether actual fits the line under the bindings so far,
// and binds its run ids when it does.
func (s sampleLine) match(actual string, bound map[string]string) bool {
	m := s.re.FindStringSubmatch(normSample(actual))
	if m == nil {
		return false
	}
	for i, doc := range s.slots {
		if got, ok := bound[doc]; ok && got != m[i+1] {
			return false
		}
	}
	for i, doc := range s.slots {
		bound[doc] = m[i+1]
	}
	return true
}

func sampleLines(text string) []sampleLine {
	var out []sampleLine
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, newSampleLine(l))
		}
	}
	return out
}

// checkInOrder fails unless every line of the sample matches a line of
// actual, in order (other lines may come between).
func checkInOrder(t *testing.T, b docBlock, actual []string, bound map[string]string) {
	t.Helper()
	i := 0
	for _, s := range sampleLines(b.text) {
		for i < len(actual) && !s.match(actual[i], bound) {
			i++
		}
		if i == len(actual) {
			t.Fatalf("%s: the sample line\n\t%s\nis not in what the commands printed (after the lines before it):\n%s", b.where, s.text, strings.Join(actual, "\n"))
		}
		i++
	}
}

// tourPorts rewrites the docs' ports (8080, 8081, 9000) to the test's
// free ones in commands, and back in what the commands print.
type tourPorts struct{ doc, real []string }

func (p tourPorts) toReal(s string) string {
	for i, d := range p.doc {
		s = regexp.MustCompile(`\b`+d+`\b`).ReplaceAllString(s, p.real[i])
	}
	return s
}

func (p tourPorts) toDoc(s string) string {
	for i, r := range p.real {
		s = strings.ReplaceAll(s, ":"+r, ":"+p.doc[i])
	}
	return s
}

func freePorts(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		out = append(out, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	}
	for _, l := range ls {
		l.Close()
	}
	return out
}

// groupProc is a process started in its own process group, so that it
// and everything it started can be stopped together.
type groupProc struct {
	cmd  *exec.Cmd
	out  *lines
	done chan struct{}
}

func startGroup(t *testing.T, dir string, env []string, name string, args ...string) *groupProc {
	t.Helper()
	p := &groupProc{out: newLines(), done: make(chan struct{})}
	p.cmd = exec.Command(name, args...)
	p.cmd.Dir, p.cmd.Env = dir, env
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	return p
}

// stop sends sig to the process and waits up to grace before killing its
// whole group.
func (p *groupProc) stop(sig syscall.Signal, grace time.Duration) {
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(grace):
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// TestReadmeTour runs the README's tour and then docs/walkthrough.md,
// every shell block in order, against `make dev` on a fresh database, and
// checks every sample output against what was printed.
func TestReadmeTour(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: the tour needs it", tool)
		}
	}
	blocks := append(docBlocks(t, readmePath, tourHeading), docBlocks(t, walkthroughPath, "")...)
	bin := binary(t)
	dsn := sqltest.NewURL(t)
	work := t.TempDir()
	if err := os.MkdirAll(filepath.Join(work, "bin", "dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(work, "bin", "chronos")); err != nil {
		t.Fatal(err)
	}
	ports := tourPorts{doc: []string{"8080", "8081", "9000"}, real: freePorts(t, 3)}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	env := cleanEnv("NO_COLOR=1", "DATABASE_URL="+dsn, "DEV_BIN="+bin, "DEV_STATE="+filepath.Join(work, "bin", "dev"),
		"DEV_PORTS="+ports.real[0]+" "+ports.real[1], "DEV_RECEIVE_PORT="+ports.real[2])
	// What a terminal printed, as the docs would show it.
	docLines := func(l *lines) []string {
		s := ports.toDoc(strings.ReplaceAll(l.String(), work+"/", ""))
		return strings.Split(s, "\n")
	}
	bound := map[string]string{} // the samples' run ids -> the real ones

	var dev, tap *groupProc
	t.Cleanup(func() {
		if tap != nil {
			tap.stop(syscall.SIGTERM, 5*time.Second)
		}
		if dev != nil {
			dev.stop(syscall.SIGTERM, 45*time.Second)
			if t.Failed() {
				t.Logf("--- make dev:\n%s", dev.out)
			}
		}
	})

	// Terminal 3: one shell for every block, as a reader's would be.
	shell := exec.Command("bash", "--norc", "--noprofile")
	shell.Dir, shell.Env = work, env
	stdin, err := shell.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := shell.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	shell.Stderr = shell.Stdout
	shell.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := shell.Start(); err != nil {
		t.Fatal(err)
	}
	shellOut := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			shellOut <- sc.Text()
		}
		close(shellOut)
	}()
	t.Cleanup(func() {
		stdin.Close()
		_ = syscall.Kill(-shell.Process.Pid, syscall.SIGKILL)
		_ = shell.Wait()
	})
	fmt.Fprintln(stdin, "exec 2>&1")
	run := func(b docBlock, n int) []string {
		marker := fmt.Sprintf("__tour_block_%d_done__", n)
		if _, err := io.WriteString(stdin, ports.toReal(b.text)+"\necho "+marker+"\n"); err != nil {
			t.Fatalf("%s: write to the shell: %v", b.where, err)
		}
		var out []string
		deadline := time.After(blockWait)
		for {
			select {
			case l, ok := <-shellOut:
				if !ok {
					t.Fatalf("%s: the shell exited; it printed:\n%s", b.where, strings.Join(out, "\n"))
				}
				if l == marker {
					return out
				}
				out = append(out, ports.toDoc(strings.ReplaceAll(l, work+"/", "")))
			case <-deadline:
				t.Fatalf("%s: not done within %s; it printed:\n%s", b.where, blockWait, strings.Join(out, "\n"))
			}
		}
	}
	// waitStream waits until every line of the sample is among what the
	// terminal printed, in any order (events of two instances interleave).
	waitStream := func(b docBlock, l *lines) {
		deadline := time.Now().Add(streamWait)
		for _, s := range sampleLines(b.text) {
			for seen := false; !seen; {
				for _, a := range docLines(l) {
					if seen = s.match(a, bound); seen {
						break
					}
				}
				if !seen {
					if time.Now().After(deadline) {
						t.Fatalf("%s: the sample line\n\t%s\nwas not printed within %s; the terminal shows:\n%s", b.where, s.text, streamWait, l)
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
		}
	}

	var last []string // the output of the last shell block
	start := time.Now()
	for n, b := range blocks {
		t.Logf("%6.1fs %s (%s)", time.Since(start).Seconds(), b.where, b.info)
		switch b.info {
		case "sh dev":
			if strings.TrimSpace(b.text) != "make dev" {
				t.Fatalf("%s: terminal 1 runs `make dev`, not %q", b.where, b.text)
			}
			dev = startGroup(t, root, env, "bash", "scripts/dev.sh")
			dev.out.wait(t, "Chronos dev cluster is up", 2*time.Minute)
			dev.out.wait(t, "Ctrl-C stops everything", 10*time.Second)
		case "sh tap":
			tap = startGroup(t, work, env, "bash", "-c", ports.toReal(b.text))
			// As a reader does: watch the tap connect before going on in
			// the other terminal, or the first events may come before it.
			tap.out.wait(t, "chronos tap: connected", 30*time.Second)
		case "sh":
			last = run(b, n)
		case "text dev":
			waitStream(b, dev.out)
		case "text tap":
			waitStream(b, tap.out)
		case "text":
			checkInOrder(t, b, last, bound)
		case "sh skip", "json", "yaml", "go", "python", "js":
		default:
			t.Fatalf("%s: a block marked %q: the tour test does not know what to do with it", b.where, b.info)
		}
	}
	if t.Failed() || len(blocks) < 20 {
		t.Fatalf("only %d blocks in the tour and the walkthrough", len(blocks))
	}
}
