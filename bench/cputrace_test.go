package bench

import (
	"testing"
	"time"
)

// between brackets a window with the last sample at or before its start
// and the first at or after its end, and says when samples do not.
func TestCPUTraceBetween(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 5, 14, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tr := &cpuTrace{}
	for i, ms := range []int{0, 20, 40, 60, 80} {
		tr.at = append(tr.at, at(ms))
		tr.samples = append(tr.samples, cpuSample{postgres: time.Duration(i) * time.Second})
	}
	for _, c := range []struct {
		name          string
		from, to      int
		before, after time.Duration
		ok            bool
	}{
		{"inside", 25, 55, 1 * time.Second, 3 * time.Second, true},
		{"on samples", 20, 60, 1 * time.Second, 3 * time.Second, true},
		{"whole", 0, 80, 0, 4 * time.Second, true},
		{"starts before the first", -5, 50, 0, 0, false},
		{"ends after the last", 10, 85, 0, 0, false},
	} {
		b, a, ok := tr.between(at(c.from), at(c.to))
		if ok != c.ok || (ok && (b.postgres != c.before || a.postgres != c.after)) {
			t.Errorf("%s: between(%d, %d) = %v, %v, %v; want %v, %v, %v", c.name, c.from, c.to,
				b.postgres, a.postgres, ok, c.before, c.after, c.ok)
		}
	}
}
