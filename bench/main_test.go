package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// binDir holds the chronos binary the child-process tests build (once,
// lazily).
var binDir string

// TestMain fails the package when any test leaves a goroutine behind.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "chronos-bench-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "make temp dir:", err)
		os.Exit(1)
	}
	binDir = dir
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}

var (
	buildOnce sync.Once
	buildErr  error
)

// binary builds the chronos binary (once per test process) for scenarios
// with child processes, and returns its path.
func binary(t *testing.T) string {
	t.Helper()
	path := filepath.Join(binDir, "chronos")
	buildOnce.Do(func() {
		out, err := exec.Command("go", "build", "-o", path, "github.com/chronoshq/chronos/cmd/chronos").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return path
}
