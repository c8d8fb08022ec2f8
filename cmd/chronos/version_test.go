package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The version and commit stamped with -ldflags show even when the build
// records no VCS information (-buildvcs=false, as in the Dockerfile).
func TestVersionStamped(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "chronos")
	build := exec.Command("go", "build", "-buildvcs=false",
		"-ldflags", "-X main.version=v9.8.7 -X main.commit=0123456789abcdef0123", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out); !strings.HasPrefix(got, "chronos v9.8.7 (0123456789ab, go") {
		t.Fatalf("chronos version: %q", got)
	}
}
