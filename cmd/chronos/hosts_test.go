package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// `chronos hosts` lists the hosts in trouble; `chronos hosts ORIGIN` shows
// one, by any URL on it.
func TestCLIHosts(t *testing.T) {
	t.Parallel()
	db := sqltest.New(t)
	env := apiEnvOn(t, db)

	if out := ok(t, env, "hosts"); !strings.Contains(out, "no host") {
		t.Fatalf("hosts, none:\n%s", out)
	}
	if _, err := db.ReportHosts(t.Context(), []sql.HostReport{{Origin: "https://api.example.com:443", Failures: 3, Error: "connection refused"}},
		sql.Breaker{Failures: 3, Cooldown: time.Minute}); err != nil {
		t.Fatal(err)
	}
	out := ok(t, env, "hosts")
	if !strings.Contains(out, "https://api.example.com:443") || !strings.Contains(out, "open") || !strings.Contains(out, "connection refused") {
		t.Fatalf("hosts:\n%s", out)
	}
	var h chronos.Host
	if err := json.Unmarshal([]byte(ok(t, env, "hosts", "https://api.example.com/hook", "-o", "json")), &h); err != nil ||
		h.State != chronos.HostOpen || h.ConsecutiveFailures != 3 {
		t.Fatalf("hosts ORIGIN -o json: %+v %v", h, err)
	}
	if code, _, _ := cli(t, env, "", "hosts", "https://nowhere.example.com"); code == 0 {
		t.Fatal("an unknown host exited 0")
	}
}

// HOST_BREAKER_FAILURES 0 or negative turns the breaker off: the reactor's
// own 0 would mean its default.
func TestBreakerFailuresOff(t *testing.T) {
	t.Parallel()
	for in, want := range map[int]int{0: -1, -5: -1, 1: 1, 10: 10} {
		if got := breakerFailures(in); got != want {
			t.Errorf("breakerFailures(%d) = %d, want %d", in, got, want)
		}
	}
}
