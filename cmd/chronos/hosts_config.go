package main

// breakerFailures maps HOST_BREAKER_FAILURES to reactor.HostConfig's
// BreakerFailures: the variable's 0 or negative turns the breaker off,
// where the reactor's 0 means its default and only a negative value is
// off.
func breakerFailures(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}
