package bench

import (
	"testing"
	"time"
)

// TestCPUReference: the reading is a plausible time per operation (a
// JSON round trip and a hash of half a kilobyte: microseconds, slower
// under the race detector and a loaded machine, never nanoseconds or
// tens of milliseconds), and results print it in µs to two decimals.
func TestCPUReference(t *testing.T) {
	t.Parallel()
	if d := cpuReference(); d < 100*time.Nanosecond || d > 20*time.Millisecond {
		t.Errorf("cpuReference() = %v, want microseconds", d)
	}
	if got := microseconds(1234567 * time.Nanosecond); got != 1234.57 {
		t.Errorf("microseconds(1.234567ms) = %v, want 1234.57", got)
	}
}
