package main

import (
	bin "encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
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

// stmtClass is a short name for a statement Chronos issues, for the idle
// breakdown.
func stmtClass(q string) string {
	l := strings.ToLower(q)
	switch {
	case q == "" || strings.HasPrefix(l, "-- ping") || l == ";":
		return "ping"
	case strings.Contains(l, "pg_try_advisory_lock"):
		return "leader_trylock"
	case strings.Contains(l, "for update skip locked") && strings.Contains(l, "leased_until = now()") && strings.Contains(l, "status = 'pending'"):
		return "claim"
	case strings.Contains(l, "set status = 'running'"):
		return "start"
	case strings.Contains(l, "unnest($1::bigint[], $2::text[]"):
		return "complete"
	case strings.HasPrefix(l, "update job_runs set leased_until"):
		return "renew"
	case strings.Contains(l, "released as"):
		return "release"
	case strings.Contains(l, "min(available_at)"):
		return "next_available"
	case strings.Contains(l, "from jobs j where enabled and next_run_at"):
		return "materialize_due"
	case strings.Contains(l, "next_run_at is null"):
		return "materialize_unscheduled"
	case strings.Contains(l, "update jobs set next_run_at"):
		return "materialize_advance"
	case strings.Contains(l, "leased_until <"):
		return "reap"
	case strings.HasPrefix(l, "delete from job_runs where id in"):
		return "prune"
	case l == "begin" || l == "commit" || l == "rollback" || strings.HasPrefix(l, "begin "):
		return "begin/commit"
	case strings.HasPrefix(l, "listen") || strings.HasPrefix(l, "unlisten"):
		return "listen"
	case strings.Contains(l, "pg_locks") || strings.Contains(l, "pg_stat_activity"):
		return "leader_lookup"
	}
	if len(q) > 40 {
		q = q[:40] + "..."
	}
	return q
}

// breakdownPer is breakdown scaled to statements per 1000 of n runs.
func breakdownPer(counts map[stmtKey]int, instance string, n int) []string {
	scaled := map[stmtKey]int{}
	for k, c := range counts {
		scaled[k] = c
	}
	out := breakdown(scaled, instance)
	for i, item := range out {
		name, num, _ := strings.Cut(item, " ")
		var c float64
		fmt.Sscan(num, &c)
		out[i] = fmt.Sprintf("%s %.0f", name, c*1000/float64(n))
	}
	return out
}

// breakdown groups counts by connection kind and statement class, most
// frequent first, as "kind/class count" items.
func breakdown(counts map[stmtKey]int, instance string) []string {
	type row struct {
		key string
		n   int
	}
	agg := map[string]int{}
	for k, n := range counts {
		kind := "pool"
		switch {
		case strings.HasSuffix(k.App, "-listener"):
			kind = "listener"
		case k.App != instance:
			kind = k.App
		}
		agg[kind+"/"+stmtClass(k.Query)] += n
	}
	var rows []row
	for k, n := range agg {
		rows = append(rows, row{k, n})
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].n != rows[j].n {
			return rows[i].n > rows[j].n
		}
		return rows[i].key < rows[j].key
	})
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprintf("%s %d", r.key, r.n)
	}
	return out
}

var errNoTCP = errors.New("the database is not reached over TCP")
