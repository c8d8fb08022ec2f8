//go:build linux

package faults

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// walSampler reads, every few milliseconds on a connection of its own,
// how far the server has inserted WAL and how far it has written it out,
// so that a crash needs no query first (which would delay it) and still
// knows where the WAL stood a moment before.
type walSampler struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	last   [2]string // insert, write
}

func startWALSampler(dsn string) *walSampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &walSampler{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		var conn *pgx.Conn
		defer func() {
			if conn != nil {
				conn.Close(context.Background())
			}
		}()
		for ctx.Err() == nil {
			if conn == nil {
				c, err := pgx.Connect(ctx, dsn)
				if err != nil {
					sleepCtx(ctx, 50*time.Millisecond)
					continue
				}
				conn = c
			}
			var ins, wr string
			if err := conn.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text, pg_current_wal_lsn()::text").Scan(&ins, &wr); err != nil {
				conn.Close(context.Background())
				conn = nil
				continue
			}
			s.mu.Lock()
			s.last = [2]string{ins, wr}
			s.mu.Unlock()
			sleepCtx(ctx, 5*time.Millisecond)
		}
	}()
	return s
}

// stop ends the sampling and returns the last sample.
func (s *walSampler) stop() [2]string {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// redoDone is the server's log line at the end of crash recovery.
var redoDone = regexp.MustCompile(`redo done at ([0-9A-F]+/[0-9A-F]+)`)

// lostWAL says how much WAL the crash took: what the server had inserted
// just before it (pos[0]; pos[1] is what it had written out) against
// where crash recovery found the WAL's end.
func lostWAL(pos [2]string, serverLog string) string {
	ins, ok1 := parseLSN(pos[0])
	wr, ok2 := parseLSN(pos[1])
	ms := redoDone.FindAllStringSubmatch(serverLog, -1)
	if !ok1 || !ok2 || len(ms) == 0 {
		return fmt.Sprintf("WAL before the crash %v; recovery end not found in the server's log", pos)
	}
	end, _ := parseLSN(ms[len(ms)-1][1])
	return fmt.Sprintf("WAL a moment before the crash: inserted to %s, written to %s (%d bytes only in memory); recovery replayed to %s (at least %d bytes inserted then were lost)",
		pos[0], pos[1], int64(ins)-int64(wr), ms[len(ms)-1][1], max(0, int64(ins)-int64(end)))
}

// parseLSN parses a WAL position such as 0/1A2B3C8.
func parseLSN(s string) (uint64, bool) {
	hi, lo, ok := strings.Cut(s, "/")
	if !ok {
		return 0, false
	}
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	return h<<32 | l, err1 == nil && err2 == nil
}
