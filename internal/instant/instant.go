// Package instant picks the earlier or the later of two instants: the
// one home of what the host breaker's sweep (sql), the bench's reports and
// the fault suite's checks each wrote for themselves, as the built-in min
// and max do not take a time.Time.
package instant

import "time"

// Earlier returns the earlier of a and b (b when they are equal).
func Earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// Later returns the later of a and b (b when they are equal).
func Later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
