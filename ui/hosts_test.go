package ui_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chronoshq/chronos/sql"
)

// The Hosts page lists the hosts in trouble with their breaker state, for
// a read key too, and is in the navigation.
func TestHostsPage(t *testing.T) {
	e, c := signedIn(t, readKey)
	code, body := c.get("/ui/hosts")
	if code != 200 || !strings.Contains(body, "No host has deferred runs or failed.") || !strings.Contains(body, `href="/ui/hosts" aria-current="page"`) {
		t.Fatalf("empty hosts page: %d\n%s", code, body)
	}
	if _, err := e.in.DB.ReportHosts(t.Context(), []sql.HostReport{{Origin: "http://127.0.0.1:9", Failures: 2, StatusCode: 502, Error: "HTTP 502 Bad Gateway"}},
		sql.Breaker{Failures: 2, Cooldown: time.Minute}); err != nil {
		t.Fatal(err)
	}
	code, body = c.get("/ui/hosts")
	if code != 200 || !strings.Contains(body, "<code>http://127.0.0.1:9</code>") || !strings.Contains(body, `<span class="st st-host-open">open</span>`) ||
		!strings.Contains(body, "HTTP 502") {
		t.Fatalf("hosts page: %d\n%s", code, body)
	}
}
