package http

import (
	"math"
	nethttp "net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/time/rate"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/internal/keyslots"
)

// Defaults of the per-key abuse limits: generous, so no honest client
// meets them, while one leaked or looping key cannot flood an instance.
const (
	DefaultRateLimit     = 1000 // requests per second per key, per instance
	DefaultRateBurst     = 2000 // requests a key may send at once
	DefaultMaxTapStreams = 16   // concurrent event-tap streams per key, per instance
	tapRetryAfter        = 5    // seconds a refused tap client is told to wait
)

// limits holds one token bucket (golang.org/x/time/rate) and one tap
// stream count per key name. Both are bounded by the configured keys.
type limits struct {
	rate  rate.Limit // 0: no rate limit
	burst int
	taps  keyslots.Slots // Max 0: no cap

	mu      sync.Mutex
	buckets map[string]*rate.Limiter
}

func newLimits(cfg Config) *limits {
	l := &limits{rate: rate.Limit(cfg.RateLimit), burst: cfg.RateBurst, taps: keyslots.Slots{Max: cfg.MaxTapStreams},
		buckets: map[string]*rate.Limiter{}}
	if l.burst < 1 {
		l.burst = max(1, int(math.Ceil(cfg.RateLimit)))
	}
	return l
}

// wait takes a token of key's bucket, or says how long until one is due.
func (l *limits) wait(key string, now time.Time) time.Duration {
	if l.rate <= 0 {
		return 0
	}
	l.mu.Lock()
	b, ok := l.buckets[key]
	if !ok {
		b = rate.NewLimiter(l.rate, l.burst)
		l.buckets[key] = b
	}
	l.mu.Unlock()
	r := b.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now) // a refused request costs no token
		return d
	}
	return 0
}

// admit applies the caller's rate limit: past it, a 429 with Retry-After
// (whole seconds, at least 1). Limits are per key, so without
// authentication there is nothing to limit.
func (s *Server) admit(c *gin.Context) bool {
	if s.cfg.AuthDisabled {
		return true
	}
	d := s.limits.wait(CallerOf(c).Name, time.Now())
	if d <= 0 {
		return true
	}
	secs := max(1, int(math.Ceil(d.Seconds())))
	c.Header("Retry-After", strconv.Itoa(secs))
	writeEnvelope(c, nethttp.StatusTooManyRequests, chronos.Errorf(chronos.ERATELIMITED,
		"API key %q is over its rate limit of %g requests per second; retry in %d s", CallerOf(c).Name, float64(s.limits.rate), secs))
	return false
}

// tapSlot caps the event-tap streams one key holds at once: each stream
// pins a goroutine and a bus subscription for as long as it lasts.
func (s *Server) tapSlot(c *gin.Context) {
	if s.cfg.AuthDisabled {
		c.Next()
		return
	}
	key := CallerOf(c).Name
	if !s.limits.taps.Take(key) {
		c.Header("Retry-After", strconv.Itoa(tapRetryAfter))
		writeEnvelope(c, nethttp.StatusTooManyRequests, chronos.Errorf(chronos.ERATELIMITED,
			"API key %q already holds %d event-tap streams, the most allowed at once", key, s.limits.taps.Max))
		return
	}
	defer s.limits.taps.Give(key)
	c.Next()
}
