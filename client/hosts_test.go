package client_test

import (
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/client"
	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

func TestHosts(t *testing.T) {
	t.Parallel()
	db := sqltest.New(t)
	c, _ := newServerOn(t, db)
	if hs, err := c.ListHosts(ctx(t)); err != nil || len(hs) != 0 {
		t.Fatalf("no hosts yet: %v %v", hs, err)
	}
	const origin = "https://api.example.com:443"
	if _, err := db.ReportHosts(ctx(t), []sql.HostReport{{Origin: origin, Failures: 2}}, sql.Breaker{Failures: 2, Cooldown: time.Minute}); err != nil {
		t.Fatal(err)
	}
	hs, err := c.ListHosts(ctx(t))
	if err != nil || len(hs) != 1 || hs[0].Origin != origin || hs[0].State != chronos.HostOpen {
		t.Fatalf("hosts: %+v %v", hs, err)
	}
	h, err := c.GetHost(ctx(t), "https://API.example.com/v1/hook")
	if err != nil || h.Origin != origin || h.ConsecutiveFailures != 2 {
		t.Fatalf("host: %+v %v", h, err)
	}
	if _, err := c.GetHost(ctx(t), "https://other.example.com"); client.Code(err) != chronos.ENOTFOUND {
		t.Fatalf("unknown host: %v", err)
	}
}
