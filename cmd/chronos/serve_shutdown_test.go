package main

import (
	"context"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"strings"
	"testing"
	"time"

	"github.com/chronoshq/chronos/internal/testwait"
)

// TestServeUntilCutsSlowRequestsAtShutdown: a request still in flight
// when SHUTDOWN_TIMEOUT runs out (a client sending its body slowly, or a
// /readyz behind a slow database) is cut off, and the shutdown is still a
// clean one: serveUntil returns nil, so SIGTERM exits 0 as documented.
// Before, serveUntil returned http.Server.Shutdown's "context deadline
// exceeded" and serve exited 1 (the model test saw it on loaded
// machines).
func TestServeUntilCutsSlowRequestsAtShutdown(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	hs := &nethttp.Server{Handler: nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		close(entered)
		// Blocks until the connection goes: the body never comes whole.
		// (Reading one byte returned at once when the "{" sent with the
		// headers was already buffered, and the request finished in time.)
		_, _ = io.Copy(io.Discard, r.Body)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- serveUntil(ctx, hs, ln, false, 200*time.Millisecond) }()

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Headers and a promise of 100 bytes of body, never kept.
	fmt.Fprintf(conn, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the request never reached the handler")
	}

	cancel() // SIGTERM
	testwait.Nil(t, done, 10*time.Second, "serveUntil after a shutdown that had to cut a request (exit 0)")
	// The cut connection is closed: the client reads EOF (or a reset).
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 512)
	n, err := conn.Read(buf)
	if err == nil || strings.Contains(err.Error(), "timeout") {
		t.Fatalf("the slow request's connection is still open after the shutdown (read %q, %v)", buf[:n], err)
	}
}
