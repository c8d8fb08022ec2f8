package bench

import (
	bin "encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
)

// countingProxy sits between an idle instance and Postgres and counts the
// statements the instance executes, by connection (application_name) and
// statement text: pg_stat_statements for one client, for servers that do
// not preload it. It reads the client's side of the wire protocol only
// (Query, Parse, Bind, Execute) and forwards every byte unchanged; a TLS
// connection is forwarded but not counted.
type countingProxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	counts map[stmtKey]int
	closed bool
}

// stmtKey names one statement of one kind of connection.
type stmtKey struct {
	App   string // application_name of the connection
	Query string // whitespace-collapsed statement text
}

func startCountingProxy(target string) (*countingProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("counting proxy: %w", err)
	}
	p := &countingProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}, counts: map[stmtKey]int{}}
	p.wg.Go(p.accept)
	return p, nil
}

func (p *countingProxy) addr() string { return p.ln.Addr().String() }

func (p *countingProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			up.Close()
			return
		}
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Go(func() {
			_, _ = io.Copy(c, up)
			c.Close()
		})
		p.wg.Go(func() {
			p.pump(c, up)
			up.Close()
		})
	}
}

// pump forwards the client's messages to the server, counting statements.
func (p *countingProxy) pump(client, server net.Conn) {
	app := "?"
	stmts := map[string]string{} // prepared statement name -> text
	portal := ""                 // text of the statement last bound
	head := make([]byte, 5)
	startup := true
	for {
		if startup {
			// Startup packets have no type byte: length, then a code.
			if _, err := io.ReadFull(client, head[:4]); err != nil {
				return
			}
			n := int(bin.BigEndian.Uint32(head[:4]))
			if n < 8 || n > 1<<20 {
				return
			}
			body := make([]byte, n-4)
			if _, err := io.ReadFull(client, body); err != nil {
				return
			}
			if _, err := server.Write(append(head[:4:4], body...)); err != nil {
				return
			}
			switch code := bin.BigEndian.Uint32(body[:4]); code {
			case 80877103, 80877104: // SSLRequest, GSSENCRequest: the server answers no (sslmode=disable) or TLS follows
				continue
			case 80877102: // CancelRequest
				return
			default:
				params := strings.Split(string(body[4:]), "\x00")
				for i := 0; i+1 < len(params); i += 2 {
					if params[i] == "application_name" {
						app = params[i+1]
					}
				}
				startup = false
			}
			continue
		}
		if _, err := io.ReadFull(client, head); err != nil {
			return
		}
		typ, n := head[0], int(bin.BigEndian.Uint32(head[1:]))
		if n < 4 {
			return
		}
		body := make([]byte, n-4)
		if _, err := io.ReadFull(client, body); err != nil {
			return
		}
		switch typ {
		case 'Q':
			p.count(app, cstring(body, 0))
		case 'P':
			name := cstring(body, 0)
			stmts[name] = cstring(body, len(name)+1)
		case 'B':
			name := cstring(body, 0)
			portal = stmts[cstring(body, len(name)+1)]
		case 'E':
			p.count(app, portal)
		}
		if _, err := server.Write(append(head[:5:5], body...)); err != nil {
			return
		}
	}
}

// cstring returns the NUL-terminated string at b[off:].
func cstring(b []byte, off int) string {
	if off >= len(b) {
		return ""
	}
	rest := b[off:]
	if i := strings.IndexByte(string(rest), 0); i >= 0 {
		return string(rest[:i])
	}
	return string(rest)
}

func (p *countingProxy) count(app, query string) {
	q := strings.Join(strings.Fields(query), " ")
	p.mu.Lock()
	p.counts[stmtKey{App: app, Query: q}]++
	p.mu.Unlock()
}

// take returns the counts so far and starts over.
func (p *countingProxy) take() map[stmtKey]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.counts
	p.counts = map[stmtKey]int{}
	return out
}

func (p *countingProxy) close() {
	p.mu.Lock()
	p.closed = true
	_ = p.ln.Close()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
