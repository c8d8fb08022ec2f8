package bench

import (
	"testing"

	"github.com/chronoshq/chronos/internal/testmain"
)

// TestMain fails the package when any test leaves a goroutine behind.
func TestMain(m *testing.M) { testmain.Run(m) }

// binary builds the chronos binary (once per test process) for scenarios
// with child processes, and returns its path.
func binary(t *testing.T) string { return testmain.MustChronos(t, "..") }
