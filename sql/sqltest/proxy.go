package sqltest

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chronoshq/chronos/internal/pgdsn"
)

// Proxy is a TCP proxy for tests that sits between a client (a chronos
// instance) and Postgres and can break the path between them on demand:
// Cut drops every connection and refuses new ones, Refuse only refuses new
// ones, Stall keeps every connection open but lets no byte through in
// either direction (a partition that TCP alone cannot notice), and Restore
// makes it a plain pipe again.
//
// A refused connection is accepted and reset at once (SO_LINGER 0), so the
// client fails fast, as it would on a closed port, while the proxy keeps
// its address for the clients' DSN.
//
// The proxy stops at the test's cleanup: it closes its listener and every
// connection and waits for all its goroutines.
type Proxy struct {
	target string
	ln     net.Listener
	wg     sync.WaitGroup

	mu      sync.Mutex
	refuse  bool
	stalled bool
	gate    chan struct{} // closed while traffic may flow; a fresh one while stalled
	conns   map[*link]struct{}
	closed  bool
	stats   ProxyStats
	timeout time.Duration
}

// ProxyStats counts what a Proxy did, for tests that want to see their
// fault land.
type ProxyStats struct {
	Accepted int // connections accepted and forwarded (or held while stalled)
	Refused  int // connections reset at once
	Cut      int // open connections closed by Cut
}

// link is one client connection and its upstream.
type link struct {
	client net.Conn
	once   sync.Once
	done   chan struct{}

	mu       sync.Mutex
	upstream net.Conn // nil until dialled
}

// close closes both ends (once); the copy loops then end. hard resets the
// client (a cut); otherwise it gets an orderly end after whatever the
// server said last.
func (l *link) close(hard bool) {
	l.once.Do(func() {
		close(l.done)
		if hard {
			reset(l.client)
		} else {
			_ = l.client.Close()
		}
		l.mu.Lock()
		if l.upstream != nil {
			_ = l.upstream.Close()
		}
		l.mu.Unlock()
	})
}

// NewProxy starts a proxy on 127.0.0.1 (a free port) forwarding to target,
// the host:port of a Postgres server. It stops at t's cleanup.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("sqltest: proxy: listen: %v", err)
	}
	gate := make(chan struct{})
	close(gate)
	p := &Proxy{target: target, ln: ln, gate: gate, conns: map[*link]struct{}{}, timeout: 5 * time.Second}
	p.wg.Add(1)
	go p.acceptLoop()
	t.Cleanup(p.close)
	return p
}

// NewProxyFor starts a proxy to the server of dsn and returns it with dsn
// rewritten to go through it.
func NewProxyFor(t testing.TB, dsn string) (*Proxy, string) {
	t.Helper()
	target, err := HostPort(dsn)
	if err != nil {
		t.Fatalf("sqltest: proxy: %v", err)
	}
	p := NewProxy(t, target)
	return p, p.URL(dsn)
}

// HostPort returns the host:port a DSN (URL or keyword/value form)
// connects to, with Postgres' defaults filled in.
func HostPort(dsn string) (string, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "", fmt.Errorf("parse dsn: %w", err)
	}
	if strings.HasPrefix(cfg.Host, "/") {
		return "", fmt.Errorf("dsn uses a unix socket (%s): the proxy needs TCP", cfg.Host)
	}
	return net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)), nil
}

// Addr is the proxy's listening address (127.0.0.1:port).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL rewrites dsn (URL or keyword/value form) to connect through the
// proxy; everything else in it is kept.
func (p *Proxy) URL(dsn string) string {
	return pgdsn.WithHost(dsn, p.Addr())
}

// Cut closes every open connection and refuses new ones until Accept or
// Restore. A stall in force stays in force for connections accepted later.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.refuse = true
	links := p.takeLinks()
	p.stats.Cut += len(links)
	p.mu.Unlock()
	for _, l := range links {
		l.close(true)
	}
}

// Refuse resets every new connection; open ones are untouched.
func (p *Proxy) Refuse() {
	p.mu.Lock()
	p.refuse = true
	p.mu.Unlock()
}

// Accept forwards new connections again (after Cut or Refuse).
func (p *Proxy) Accept() {
	p.mu.Lock()
	p.refuse = false
	p.mu.Unlock()
}

// Stall lets no byte through, either way, on open connections and on new
// ones, which are accepted and held. Data already read is delivered after
// Restore, as a healed network would.
func (p *Proxy) Stall() {
	p.mu.Lock()
	if !p.stalled {
		p.stalled = true
		p.gate = make(chan struct{})
	}
	p.mu.Unlock()
}

// Restore ends every fault: new connections are accepted and stalled
// traffic flows again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.refuse = false
	if p.stalled {
		p.stalled = false
		close(p.gate)
	}
	p.mu.Unlock()
}

// Conns is the number of open client connections.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Stats returns the counters so far.
func (p *Proxy) Stats() ProxyStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

func (p *Proxy) takeLinks() []*link {
	links := make([]*link, 0, len(p.conns))
	for l := range p.conns {
		links = append(links, l)
		delete(p.conns, l)
	}
	return links
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed at cleanup (Accept only fails then, in tests)
		}
		p.mu.Lock()
		switch {
		case p.closed:
			p.mu.Unlock()
			reset(c)
			return
		case p.refuse:
			p.stats.Refused++
			p.mu.Unlock()
			reset(c)
			continue
		}
		l := &link{client: c, done: make(chan struct{})}
		p.conns[l] = struct{}{}
		p.stats.Accepted++
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serve(l)
	}
}

// serve dials upstream (once traffic may flow) and pipes both ways until
// either side ends or the link is cut.
func (p *Proxy) serve(l *link) {
	defer p.wg.Done()
	defer p.forget(l)
	defer l.close(false)
	if !p.wait(l) {
		return
	}
	up, err := net.DialTimeout("tcp", p.target, p.timeout)
	if err != nil {
		return // the client sees its connection close, as with a dead server
	}
	l.mu.Lock()
	l.upstream = up
	l.mu.Unlock()
	select {
	case <-l.done: // cut while dialling: close() may have missed up
		_ = up.Close()
		return
	default:
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pipe(l, up, l.client) }()
	go func() { defer wg.Done(); p.pipe(l, l.client, up) }()
	wg.Wait()
}

// pipe copies src to dst, holding at the gate while stalled, and closes
// the link when src ends.
func (p *Proxy) pipe(l *link, dst, src net.Conn) {
	defer l.close(false)
	buf := make([]byte, 32<<10)
	for {
		if !p.wait(l) {
			return
		}
		n, err := src.Read(buf)
		if n > 0 {
			// A read that began before a stall must not deliver during it.
			if !p.wait(l) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF, a reset peer or a cut: the link closes either way
		}
	}
}

// wait blocks while the proxy is stalled; false when the link ended.
func (p *Proxy) wait(l *link) bool {
	for {
		p.mu.Lock()
		gate := p.gate
		p.mu.Unlock()
		select {
		case <-l.done:
			return false
		case <-gate:
			// Stall may have swapped the gate after we read it.
			p.mu.Lock()
			open := !p.stalled
			p.mu.Unlock()
			if open {
				return true
			}
		}
	}
}

func (p *Proxy) forget(l *link) {
	p.mu.Lock()
	delete(p.conns, l)
	p.mu.Unlock()
}

// close stops the proxy: no more accepts, every link closed, every
// goroutine returned.
func (p *Proxy) close() {
	p.mu.Lock()
	p.closed = true
	links := p.takeLinks()
	p.mu.Unlock()
	_ = p.ln.Close()
	for _, l := range links {
		l.close(true)
	}
	p.wg.Wait()
}

// reset closes c with SO_LINGER 0, so the peer sees a reset at once rather
// than an orderly end it might wait on.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}
