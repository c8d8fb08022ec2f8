package reactor

import (
	"sync"
	"sync/atomic"

	"github.com/chronoshq/chronos"
)

// maxCachedOrigins bounds originCache: past it, origins are computed
// each time (a cluster with that many distinct targets gains little from
// a cache anyway).
const maxCachedOrigins = 4096

// originCache memoises chronos.Origin per target URL: a delivery needs
// its origin for the host breaker, and parsing the URL each time cost a
// few allocations per run. Safe for concurrent use; the zero value is
// ready.
type originCache struct {
	m sync.Map // target URL -> origin
	n atomic.Int64
}

// of is chronos.Origin(target).
func (c *originCache) of(target string) string {
	if o, ok := c.m.Load(target); ok {
		return o.(string)
	}
	o := chronos.Origin(target)
	if c.n.Load() < maxCachedOrigins {
		if _, loaded := c.m.LoadOrStore(target, o); !loaded {
			c.n.Add(1)
		}
	}
	return o
}
