// Package testmain is the TestMain of the packages whose tests run a
// chronos binary they build (bench, cmd/chronos, deploy): goleak over the
// whole run, and the binary built once per test process into a temporary
// directory that is removed at the end.
package testmain

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// built is the chronos binary of this test process.
var built struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// Run is TestMain: m's tests, failed when any leaves a goroutine behind;
// then the binary's directory, if one was built, is removed.
func Run(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if built.dir != "" {
			_ = os.RemoveAll(built.dir)
		}
		os.Exit(code)
	}))
}

// Chronos builds ./cmd/chronos of the module whose root is root (relative
// to the test's directory: it is built with that module's go.mod, as it
// ships) once per test process, and returns the binary's path.
func Chronos(root string) (string, error) {
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "chronos-test-")
		if err != nil {
			built.err = fmt.Errorf("make temp dir: %w", err)
			return
		}
		built.dir = dir
		path := filepath.Join(dir, "chronos")
		out, err := exec.Command("go", "build", "-C", root, "-o", path, "./cmd/chronos").CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		built.path = path
	})
	return built.path, built.err
}

// MustChronos is Chronos, failing t when the build fails.
func MustChronos(t testing.TB, root string) string {
	t.Helper()
	path, err := Chronos(root)
	if err != nil {
		t.Fatal(err)
	}
	return path
}
