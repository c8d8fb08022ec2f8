package ui_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestOverviewShowsVersions: the overview's cluster list shows each
// instance's registered version beside its name.
func TestOverviewShowsVersions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	ctx := t.Context()
	pcfg, err := pgxpool.ParseConfig(e.in.DB.Pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	cfg := pcfg.ConnConfig
	cfg.RuntimeParams["application_name"] = "node-v-listener" // how instances are found
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := e.in.DB.RegisterInstance(ctx, "node-v", "v1.2.3"); err != nil {
		t.Fatal(err)
	}
	c := e.client(t)
	c.signIn(writeKey)
	if _, body := c.get("/ui/"); !strings.Contains(body, "<li>node-v · v1.2.3</li>") {
		t.Errorf("the overview does not show node-v's version:\n%s", body)
	}
}
