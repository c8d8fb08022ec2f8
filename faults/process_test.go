package faults

import "time"

// awaitExit waits up to within for exited, which closes once a process
// the suite started has been waited for; past that it calls kill and
// waits again. It reports whether the process exited of itself. It is
// the one end of the suite's processes (instances, postgres, pgbouncer):
// a process that ignores its signal never outlives the test.
func awaitExit(exited <-chan struct{}, within time.Duration, kill func()) bool {
	select {
	case <-exited:
		return true
	case <-time.After(within):
		kill()
		<-exited
		return false
	}
}
