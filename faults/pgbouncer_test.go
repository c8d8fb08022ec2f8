//go:build linux

package faults

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chronoshq/chronos/internal/syncbuf"
)

// pgbouncerPath finds Debian's pgbouncer (.ci/run installs it; the
// pooler test fails, never skips, without it).
func pgbouncerPath(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"} {
		if fileExists(p) {
			return p
		}
	}
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p
	}
	t.Fatal("pgbouncer not found: install it (apt-get install -y pgbouncer; .ci/run does)")
	return ""
}

// startPgbouncer runs PgBouncer in transaction pooling mode, with an
// otherwise stock configuration (no ignore_startup_parameters, no
// max_prepared_statements), in front of dsn's server, and returns dsn as
// reached through it. It is stopped at cleanup. PgBouncer refuses to run
// as root: as root it switches to the postgres user (or nobody).
func startPgbouncer(t testing.TB, dsn string) string {
	t.Helper()
	bin := pgbouncerPath(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("pgbouncer: parse dsn: %v", err)
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "5432"
	}
	userName := u.User.Username()
	pass, _ := u.User.Password()
	dir, err := os.MkdirTemp("", "chronos-pgbouncer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	listen := freePort(t)
	server := fmt.Sprintf("host=%s port=%s user=%s", host, port, userName)
	if pass != "" {
		server += " password=" + pass
	}
	ini := fmt.Sprintf(`[databases]
* = %s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
max_client_conn = 500
default_pool_size = 20
`, server, listen, filepath.Join(dir, "userlist.txt"))
	if err := os.WriteFile(filepath.Join(dir, "pgbouncer.ini"), []byte(ini), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "userlist.txt"), []byte(strconv.Quote(userName)+` ""`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{filepath.Join(dir, "pgbouncer.ini")}
	if os.Geteuid() == 0 {
		as := "nobody"
		if _, err := user.Lookup("postgres"); err == nil {
			as = "postgres"
		}
		args = append([]string{"-u", as}, args...)
	}
	cmd := exec.Command(bin, args...)
	out := &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start pgbouncer: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM) // SIGTERM: immediate shutdown
		awaitExit(exited, 5*time.Second, func() { _ = cmd.Process.Kill() })
	})
	pu := *u
	pu.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(listen))
	pooled := pu.String()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, pooled)
		if err == nil {
			_, err = conn.Exec(ctx, "SELECT 1")
			conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return pooled
		}
		select {
		case <-exited:
			t.Fatalf("pgbouncer exited: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("pgbouncer not answering within 15 s: %v\n%s", err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
