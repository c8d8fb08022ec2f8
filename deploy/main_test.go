package deploy_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/chronoshq/chronos/internal/testmain"
)

// TestMain fails the package when any test leaves a goroutine behind.
func TestMain(m *testing.M) { testmain.Run(m) }

// buildBinary builds cmd/chronos in the chronos module (with its own
// go.mod, as it ships) once per process and returns its path.
func buildBinary() (string, error) { return testmain.Chronos("..") }

// parseFile is what parse makes of the file at path; the test stops when
// the file cannot be read or parsed (the error named by what).
func parseFile[T any](t *testing.T, path, what string, parse func(io.Reader) (T, error)) T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := parse(f)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// repo is the path of a file of the repository, from this directory.
func repo(parts ...string) string { return filepath.Join(append([]string{".."}, parts...)...) }
