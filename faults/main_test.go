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

// pick returns the size for the current mode: short (`make test`, plain
// go test, -short), normal (longTestsVar set, as .ci/run does) or long
// (-soak). The short sizes run every scenario and check every invariant,
// on fewer jobs and shorter windows, so that `make test` fits in five
// minutes on two cores; CI runs the normal sizes.
func pick[T any](short, normal, long T) T {
	switch {
	case *soak:
		return long
	case testing.Short() || !longTests():
		return short
	}
	return normal
}

// longTests says whether the long fault tests run and the others run at
// their normal sizes (longTestsVar set, or -soak).
func longTests() bool { return os.Getenv(longTestsVar) != "" || *soak }

// longTestsVar turns on the fault tests that take over a minute or need
// more than the shared test server (.ci/run sets it).
const longTestsVar = "CHRONOS_LONG_TESTS"

// skipUnlessLong skips a long fault test unless longTestsVar is set or
// the run is a -soak.
func skipUnlessLong(t *testing.T) {
	t.Helper()
	if !longTests() {
		t.Skipf("a long fault test: set %s=1 (.ci/run does) or -soak", longTestsVar)
	}
}
