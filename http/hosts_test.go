package http

import (
	nethttp "net/http"
	"net/url"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// GET /v1/hosts and /v1/hosts/{origin}: the origins in trouble with their
// breaker state, as the document describes them.
func TestHostsList(t *testing.T) {
	e := parallelEnv(t)
	w := e.do("GET", "/v1/hosts", nil)
	wantStatus(t, w, nethttp.StatusOK)
	if got := decode[hostList](t, w); got.Hosts == nil || len(got.Hosts) != 0 {
		t.Fatalf("no hosts yet: %s", w.Body)
	}

	const origin = "http://127.0.0.1:9"
	ctx := t.Context()
	ch, err := e.db.ReportHosts(ctx, []sql.HostReport{{Origin: origin, Failures: 3, StatusCode: 502, Error: "HTTP 502 Bad Gateway"}},
		sql.Breaker{Failures: 3, Cooldown: time.Hour})
	if err != nil || len(ch) != 1 || !ch[0].Opened {
		t.Fatalf("open the breaker: %+v %v", ch, err)
	}
	if _, err := e.db.ReportHosts(ctx, []sql.HostReport{{Origin: "https://api.example.com:443", Failures: 1}}, sql.Breaker{Failures: 3}); err != nil {
		t.Fatal(err)
	}

	w = e.do("GET", "/v1/hosts", nil)
	wantStatus(t, w, nethttp.StatusOK)
	got := decode[hostList](t, w).Hosts
	if len(got) != 2 || got[0].Origin != origin || got[0].State != chronos.HostOpen || got[0].ConsecutiveFailures != 3 ||
		got[0].OpenUntil == nil || got[0].BreakerOpens != 1 || got[1].State != chronos.HostOK || got[1].ConsecutiveFailures != 1 {
		t.Fatalf("hosts: %s", w.Body)
	}

	for _, name := range []string{url.PathEscape(origin), url.PathEscape(origin + "/some/path?q=1"), url.PathEscape("HTTP://127.0.0.1:9")} {
		w = e.do("GET", "/v1/hosts/"+name, nil)
		wantStatus(t, w, nethttp.StatusOK)
		if h := decode[chronos.Host](t, w); h.Origin != origin || h.State != chronos.HostOpen || h.LastStatusCode == nil || *h.LastStatusCode != 502 {
			t.Fatalf("host %s: %s", name, w.Body)
		}
	}
	w = e.do("GET", "/v1/hosts/"+url.PathEscape("http://127.0.0.1:10"), nil)
	wantStatus(t, w, nethttp.StatusNotFound)
	w = e.do("GET", "/v1/hosts/not-an-origin", nil)
	wantFields(t, w, "origin")
	w = e.do("GET", "/v1/hosts?limit=1", nil)
	wantStatus(t, w, nethttp.StatusBadRequest)
}
