package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chronoshq/chronos/internal/syncbuf"
)

// childProcess is an instance running `chronos serve` as a child process.
type childProcess struct {
	id     string
	addr   string
	cmd    *exec.Cmd
	done   chan struct{}
	stderr *syncbuf.Buffer
	client *nethttp.Client
}

// childBinary says whether path is a chronos binary that can run serve (a
// go test binary cannot).
func childBinary(path string) bool {
	return path != "" && !strings.HasSuffix(path, ".test")
}

func startChild(ctx context.Context, b *runner, dsn, id string, opts instanceOpts) (*childProcess, error) {
	if !childBinary(b.cfg.Binary) {
		return nil, fmt.Errorf("no chronos binary for child processes (%q): pass --binary", b.cfg.Binary)
	}
	// A free port: listen, note it, close. The child binds it at once.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(b.cfg.Binary, "serve")
	env := []string{}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(b.cfg.ServeEnv, name) {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env,
		"DATABASE_URL="+dsn, "HTTP_ADDR="+addr, "INSTANCE_ID="+id, "AUTH_DISABLED=true",
		"ALLOW_PRIVATE_TARGETS=true", "MIGRATE_ON_START=false", "LOG_FORMAT=text",
		"LOG_LEVEL="+b.cfg.LogLevel, "WORKER_CONCURRENCY="+strconv.Itoa(b.cfg.Concurrency),
		"SHUTDOWN_TIMEOUT=10s")
	if opts.retention > 0 {
		cmd.Env = append(cmd.Env, "RUN_RETENTION="+opts.retention.String())
	}
	if b.cfg.AsyncCommit {
		cmd.Env = append(cmd.Env, "REACTOR_SYNCHRONOUS_COMMIT=off")
	} else {
		cmd.Env = append(cmd.Env, "REACTOR_SYNCHRONOUS_COMMIT=on")
	}
	errBuf := &syncbuf.Buffer{}
	cmd.Stderr = errBuf
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", b.cfg.Binary, err)
	}
	c := &childProcess{id: id, addr: "http://" + addr, cmd: cmd, done: make(chan struct{}), stderr: errBuf,
		client: &nethttp.Client{Timeout: 3 * time.Second}}
	go func() {
		_ = cmd.Wait()
		close(c.done)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c.ready(ctx) {
			return c, nil
		}
		select {
		case <-c.done:
			return nil, fmt.Errorf("child exited: %s", strings.TrimSpace(errBuf.String()))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = c.stop()
			return nil, errors.New("child not ready within 20s")
		}
	}
}

// readyz fetches the child's /readyz.
func (c *childProcess) readyz(ctx context.Context) (int, map[string]any) {
	req, err := nethttp.NewRequestWithContext(ctx, "GET", c.addr+"/readyz", nil)
	if err != nil {
		return 0, nil
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

func (c *childProcess) ready(ctx context.Context) bool {
	code, _ := c.readyz(ctx)
	return code == nethttp.StatusOK
}

func (c *childProcess) name() string { return c.id }
func (c *childProcess) url() string  { return c.addr }
func (c *childProcess) pid() int     { return c.cmd.Process.Pid }

func (c *childProcess) isLeader(ctx context.Context) bool {
	_, body := c.readyz(ctx)
	l, _ := body["leader"].(map[string]any)
	self, _ := l["self"].(bool)
	return self
}

func (c *childProcess) stop() error {
	defer c.client.CloseIdleConnections()
	select {
	case <-c.done:
		return nil
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
		return errors.New("did not stop within 30s of SIGTERM; killed")
	}
	if code := c.cmd.ProcessState.ExitCode(); code != 0 {
		return fmt.Errorf("exit code %d", code)
	}
	return nil
}
