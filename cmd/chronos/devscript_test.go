package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDevScriptRefusalLeavesTheRunningCluster: a second `make dev` that
// refuses to start because a port is taken exits 1 and leaves the pid
// files of the cluster already running alone (the failover demo reads
// them); it removes only what it created itself.
func TestDevScriptRefusalLeavesTheRunningCluster(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := strings.TrimPrefix(busy.Addr().String(), "127.0.0.1:")
	state := t.TempDir()
	running := map[string]string{"chronos-1.pid": "4242\n", "chronos-2.pid": "4243\n", "receive.pid": "4244\n"}
	for name, pid := range running {
		if err := os.WriteFile(filepath.Join(state, name), []byte(pid), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "scripts/dev.sh")
	cmd.Dir = root
	cmd.Env = cleanEnv("NO_COLOR=1", "DEV_STATE="+state, "DEV_PORTS="+port+" "+freePorts(t, 1)[0], "DEV_BIN=/nonexistent")
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(string(out), "port "+port+" is in use") {
		t.Fatalf("dev.sh with port %s taken: exit %d (%v), want 1 and a word about the port:\n%s", port, code, err, out)
	}
	for name, pid := range running {
		b, err := os.ReadFile(filepath.Join(state, name))
		if err != nil || string(b) != pid {
			t.Errorf("the running cluster's %s: %q, %v; want it untouched", name, b, err)
		}
	}
	if strings.Contains(string(out), "stopping") {
		t.Errorf("a refusal stops nothing, but says so:\n%s", out)
	}
}
