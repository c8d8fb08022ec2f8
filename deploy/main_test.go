package deploy_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// binDir holds the chronos binary that the tests build (once, lazily).
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "chronos-deploy-test-")
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

// buildBinary builds cmd/chronos in the chronos module (with its own
// go.mod, as it ships) once per process and returns its path.
func buildBinary() (string, error) {
	path := filepath.Join(binDir, "chronos")
	buildOnce.Do(func() {
		out, err := exec.Command("go", "build", "-C", "..", "-o", path, "./cmd/chronos").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	return path, buildErr
}

// repo is the path of a file of the repository, from this directory.
func repo(parts ...string) string { return filepath.Join(append([]string{".."}, parts...)...) }
