package sqltest

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"
)

// proxied returns a fresh database's DSN through a new proxy.
func proxied(t *testing.T) (*Proxy, string) {
	t.Helper()
	return NewProxyFor(t, NewEmptyURL(t))
}

func proxyConnect(t *testing.T, ctx context.Context, dsn string) (*pgx.Conn, error) {
	t.Helper()
	c, err := pgx.Connect(ctx, dsn)
	if err == nil {
		t.Cleanup(func() { _ = c.Close(context.Background()) })
	}
	return c, err
}

func ping(ctx context.Context, c *pgx.Conn) error {
	var n int
	return c.QueryRow(ctx, "SELECT 1").Scan(&n)
}

// proxiedConn marks t parallel and returns a fresh database's DSN through
// a new proxy and a connection through it.
func proxiedConn(t *testing.T) (*Proxy, string, *pgx.Conn) {
	t.Helper()
	t.Parallel()
	p, dsn := proxied(t)
	return p, dsn, mustConnect(t, dsn)
}

// within is a context that ends after d, or at the end of the test.
func within(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func mustConnect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := proxyConnect(t, ctx, dsn)
	if err != nil {
		t.Fatalf("connect through proxy: %v", err)
	}
	if err := ping(ctx, c); err != nil {
		t.Fatalf("query through proxy: %v", err)
	}
	return c
}

func TestProxyForwards(t *testing.T) {
	t.Parallel()
	p, dsn := proxied(t)
	if !strings.Contains(dsn, p.Addr()) {
		t.Fatalf("URL %q does not name the proxy %s", dsn, p.Addr())
	}
	c := mustConnect(t, dsn)
	var db string
	if err := c.QueryRow(context.Background(), "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(db, testPrefix) {
		t.Fatalf("proxy reached database %q, want the test's own", db)
	}
	if p.Conns() != 1 || p.Stats().Accepted != 1 {
		t.Fatalf("conns %d, stats %+v; want one accepted connection", p.Conns(), p.Stats())
	}
}

func TestProxyCutClosesAndRefuses(t *testing.T) {
	p, dsn, c := proxiedConn(t)
	p.Cut()
	ctx := within(t, 15*time.Second)
	if err := ping(ctx, c); err == nil {
		t.Fatal("a query on a cut connection succeeded")
	}
	if ctx.Err() != nil {
		t.Fatal("a cut connection hung instead of failing")
	}
	if _, err := proxyConnect(t, ctx, dsn); err == nil {
		t.Fatal("a new connection got through a cut")
	}
	// pgx may try more than once, so "at least one" refused.
	if s := p.Stats(); s.Cut != 1 || s.Refused < 1 {
		t.Fatalf("stats %+v, want 1 cut and some refused", s)
	}
	p.Restore()
	mustConnect(t, dsn)
}

func TestProxyRefuseKeepsOpenConnections(t *testing.T) {
	p, dsn, c := proxiedConn(t)
	p.Refuse()
	ctx := within(t, 20*time.Second)
	if err := ping(ctx, c); err != nil {
		t.Fatalf("an open connection broke on Refuse: %v", err)
	}
	if _, err := proxyConnect(t, ctx, dsn); err == nil {
		t.Fatal("a new connection got through Refuse")
	}
	p.Accept()
	mustConnect(t, dsn)
}

func TestProxyStallHoldsTrafficUntilRestore(t *testing.T) {
	p, dsn, c := proxiedConn(t)
	p.Stall()

	// A query on an open connection gets no answer while stalled...
	short := within(t, 300*time.Millisecond)
	if err := ping(short, c); err == nil {
		t.Fatal("a query got an answer through a stall")
	}
	// ...nor does a new connection, which is accepted and held.
	connected := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, dsn)
		if err == nil {
			err = ping(ctx, c)
			_ = c.Close(context.Background())
		}
		connected <- err
	}()
	select {
	case err := <-connected:
		t.Fatalf("a connection completed through a stall (err %v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	// The held ones: the open connection, the new one (once its dial has
	// reached the proxy, which a loaded machine may delay), and maybe the
	// cancel request pgx sent for the timed-out query.
	waitFor(t, func() bool { return p.Conns() >= 2 })
	p.Restore()
	if err := <-connected; err != nil {
		t.Fatalf("the held connection did not complete after Restore: %v", err)
	}
	mustConnect(t, dsn)
}

func TestProxyStalledQueryCompletesAfterRestore(t *testing.T) {
	p, _, c := proxiedConn(t)
	p.Stall()
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		done <- ping(ctx, c)
	}()
	select {
	case err := <-done:
		t.Fatalf("query finished during the stall (err %v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	p.Restore()
	if err := <-done; err != nil {
		t.Fatalf("stalled query failed after Restore: %v", err)
	}
}

func TestProxyCutWhileStalled(t *testing.T) {
	p, dsn, c := proxiedConn(t)
	p.Stall()
	p.Cut()
	ctx := within(t, 15*time.Second)
	if err := ping(ctx, c); err == nil || ctx.Err() != nil {
		t.Fatalf("query on a stalled then cut connection: err %v, ctx %v; want a prompt failure", err, ctx.Err())
	}
	p.Restore()
	mustConnect(t, dsn)
}

func TestProxyServerSideCloseReachesClient(t *testing.T) {
	_, _, c := proxiedConn(t)
	admin := mustConnect(t, os.Getenv(EnvVar))
	ctx := within(t, 20*time.Second)
	if _, err := admin.Exec(ctx, "SELECT pg_terminate_backend($1)", c.PgConn().PID()); err != nil {
		t.Fatal(err)
	}
	err := ping(ctx, c)
	if err == nil || ctx.Err() != nil {
		t.Fatalf("query on a terminated backend: err %v, ctx %v; want a prompt failure", err, ctx.Err())
	}
}

func TestProxyClientCloseEndsUpstream(t *testing.T) {
	p, _, c := proxiedConn(t)
	pid := c.PgConn().PID()
	// A hard close, as a kill -9 leaves it: no Terminate message.
	if err := c.PgConn().Conn().Close(); err != nil {
		t.Fatal(err)
	}
	admin := mustConnect(t, os.Getenv(EnvVar))
	deadline := time.Now().Add(10 * time.Second)
	for {
		var alive bool
		if err := admin.QueryRow(context.Background(),
			"SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1)", pid).Scan(&alive); err != nil {
			t.Fatal(err)
		}
		if !alive && p.Conns() == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("backend %d alive %v, proxy conns %d, 10 s after the client vanished", pid, alive, p.Conns())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestProxyURL(t *testing.T) {
	t.Parallel()
	p := NewProxy(t, "127.0.0.1:1")
	host, port, _ := net.SplitHostPort(p.Addr())
	got := p.URL("postgres://u:pw@db.example:5432/x?sslmode=disable")
	want := "postgres://u:pw@" + p.Addr() + "/x?sslmode=disable"
	if got != want {
		t.Errorf("URL form: got %q, want %q", got, want)
	}
	kv := p.URL("host=db.example port=5432 dbname=x")
	cfg, err := pgx.ParseConfig(kv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != host || cfg.Port != mustPort(t, port) || cfg.Database != "x" {
		t.Errorf("keyword form %q parses to %s:%d/%s", kv, cfg.Host, cfg.Port, cfg.Database)
	}
	if hp, err := HostPort("postgres://u@db.example:6543/x"); err != nil || hp != "db.example:6543" {
		t.Errorf("HostPort = %q, %v", hp, err)
	}
	if _, err := HostPort("host=/tmp dbname=x"); err == nil {
		t.Error("HostPort accepted a unix socket")
	}
}

func mustPort(t *testing.T, s string) uint16 {
	t.Helper()
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil {
		t.Fatal(err)
	}
	return uint16(n)
}

// TestProxyStopsAtCleanup checks that a proxy with open, stalled and held
// connections leaves no goroutine behind once its test has ended.
func TestProxyStopsAtCleanup(t *testing.T) {
	// Not parallel: goleak.VerifyNone sees every goroutine of the process.
	before := goleak.IgnoreCurrent()
	t.Run("inner", func(t *testing.T) {
		p := NewProxy(t, "127.0.0.1:1") // nothing listens: dials fail
		c1, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c1.Close()
		p.Stall()
		c2, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c2.Close()
		waitFor(t, func() bool { return p.Conns() >= 1 })
	})
	if err := goleak.Find(before); err != nil {
		t.Fatalf("proxy goroutines outlived the test: %v", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(errors.New("condition not met within 20 s"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
