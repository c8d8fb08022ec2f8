package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-systemd/v22/unit"
)

// TestSystemdUnit parses the unit with go-systemd's parser and checks what
// chronos needs of it; where systemd-analyze exists (it does on the
// development machines and CI), it also verifies the unit with systemd's
// own parser, against the real binary, and fails on any complaint, since
// systemd only warns about unknown keys.
func TestSystemdUnit(t *testing.T) {
	opts := parseFile(t, "systemd/chronos.service", "systemd/chronos.service", unit.DeserializeOptions)
	get := func(section, name string) string {
		v := ""
		for _, o := range opts {
			if o.Section == section && o.Name == name {
				v = o.Value // the last one wins, as in systemd
			}
		}
		return v
	}
	if got := get("Service", "ExecStart"); !strings.HasSuffix(got, "chronos serve") {
		t.Errorf("ExecStart %q does not run chronos serve", got)
	}
	if get("Service", "EnvironmentFile") == "" {
		t.Error("no EnvironmentFile: where do DATABASE_URL and API_KEYS come from?")
	}
	if got := get("Service", "KillSignal"); got != "SIGTERM" {
		t.Errorf("KillSignal %q, want SIGTERM (graceful shutdown)", got)
	}
	stop, err := time.ParseDuration(get("Service", "TimeoutStopSec"))
	if err != nil {
		t.Fatalf("TimeoutStopSec: %v", err)
	}
	if need := 25*time.Second + shutdownSlack; stop <= need {
		t.Errorf("TimeoutStopSec %s must exceed the default SHUTDOWN_TIMEOUT plus serve's slack (%s)", stop, need)
	}
	if got := get("Service", "RestartPreventExitStatus"); got != "2" {
		t.Errorf("RestartPreventExitStatus %q, want 2 (a configuration error is not fixed by restarting)", got)
	}
	if get("Service", "User") == "" && get("Service", "DynamicUser") != "yes" {
		t.Error("the unit runs chronos as root")
	}
	if get("Install", "WantedBy") == "" {
		t.Error("no [Install] WantedBy: systemctl enable would do nothing")
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze not installed: checked with go-systemd's parser only")
		return
	}
	bin, err := buildBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	envFile := filepath.Join(dir, "chronos.env")
	if err := os.WriteFile(envFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("systemd/chronos.service")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.NewReplacer("/usr/local/bin/chronos", bin, "/etc/chronos/chronos.env", envFile).Replace(string(b))
	path := filepath.Join(dir, "chronos.service")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
