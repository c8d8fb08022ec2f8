package faults

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// built is the chronos binary, built once per test process.
var built struct {
	once sync.Once
	dir  string
	path string
	err  error
	took time.Duration
}

// chronosBinary builds cmd/chronos into a temporary directory, once, and
// returns its path. With -soak, and under -race, the instances are built
// with the race detector too (a race in any of them fails the suite); by
// default they are not, to keep three instances' load moderate on two
// cores.
func chronosBinary(t testing.TB) string {
	t.Helper()
	built.once.Do(func() {
		start := time.Now()
		dir, err := os.MkdirTemp("", "chronos-faults-")
		if err != nil {
			built.err = err
			return
		}
		built.dir = dir
		args := []string{"build", "-o", filepath.Join(dir, "chronos")}
		if raceInstances() {
			args = append(args, "-race")
		}
		args = append(args, "github.com/chronoshq/chronos/cmd/chronos")
		cmd := exec.Command(goTool(), args...)
		cmd.Dir = ".." // the module root
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = &buildError{err: err, out: string(out)}
			return
		}
		built.path = filepath.Join(dir, "chronos")
		built.took = time.Since(start)
	})
	if built.err != nil {
		t.Fatalf("build cmd/chronos: %v", built.err)
	}
	return built.path
}

// goTool is the go command that runs this test, falling back to PATH.
func goTool() string {
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"); fileExists(p) {
			return p
		}
	}
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// removeBinary deletes the build directory at the end of the process.
func removeBinary() {
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// raceInstances says whether the instances are built with -race.
func raceInstances() bool { return raceEnabled && *soak }
