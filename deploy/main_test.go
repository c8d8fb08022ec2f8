package deploy_test

import (
	"path/filepath"
	"testing"

	"github.com/chronoshq/chronos/internal/testmain"
)

// TestMain fails the package when any test leaves a goroutine behind.
func TestMain(m *testing.M) { testmain.Run(m) }

// buildBinary builds cmd/chronos in the chronos module (with its own
// go.mod, as it ships) once per process and returns its path.
func buildBinary() (string, error) { return testmain.Chronos("..") }

// repo is the path of a file of the repository, from this directory.
func repo(parts ...string) string { return filepath.Join(append([]string{".."}, parts...)...) }
