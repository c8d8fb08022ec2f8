package faults

import (
	"flag"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// soak runs every scenario and the load test for their full durations.
var soak = flag.Bool("soak", false, "run the fault scenarios and the API load test for their full (long) durations")

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		removeBinary()
		os.Exit(code)
	}))
}

// pick returns the duration for the current mode: -short, default or -soak.
func pick[T any](short, normal, long T) T {
	switch {
	case *soak:
		return long
	case testing.Short():
		return short
	}
	return normal
}

// longTestsVar turns on the fault tests that take over a minute or need
// more than the shared test server (.ci/run sets it).
const longTestsVar = "CHRONOS_LONG_TESTS"

// skipUnlessLong skips a long fault test unless longTestsVar is set or
// the run is a -soak.
func skipUnlessLong(t *testing.T) {
	t.Helper()
	if os.Getenv(longTestsVar) == "" && !*soak {
		t.Skipf("a long fault test: set %s=1 (.ci/run does) or -soak", longTestsVar)
	}
}
