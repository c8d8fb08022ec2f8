package http

import (
	"context"
	nethttp "net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// TestReadyzVersions: /readyz shows this binary's version and schema
// level, every connected instance with its registered version, and names
// as leader the instance whose dedicated session holds the lock, with its
// version; chronos_build_info carries the version.
func TestReadyzVersions(t *testing.T) {
	e := parallelEnv(t, func(c *Config) { c.Version = "v9.9.9" })
	ctx := t.Context()
	dsn := e.db.Pool.Config().ConnString()

	// Instance node-x: a LISTEN connection (which names instances), a
	// registered version, and the leader's lock on its own session.
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = "node-x-listener"
	lconn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer lconn.Close(context.Background())
	if _, err := e.db.RegisterInstance(ctx, "node-x", "v1.2.3"); err != nil {
		t.Fatal(err)
	}
	lead := sqltest.Leading(t, ctx, dsn, "node-x")

	w := e.doKey("GET", "/readyz", nil, "")
	wantStatus(t, w, nethttp.StatusOK)
	r := decode[readiness](t, w)
	if r.Version != "v9.9.9" || r.SchemaLevel != sql.SchemaLevel() || r.SchemaLevel < 14 {
		t.Errorf("version %q schema level %d, want v9.9.9 and %d", r.Version, r.SchemaLevel, sql.SchemaLevel())
	}
	if r.Leader.Instance != "node-x" || r.Leader.Version != "v1.2.3" || r.Leader.Self {
		t.Errorf("leader %+v, want node-x v1.2.3, not self", r.Leader)
	}
	if len(r.Instances) != 1 || r.Instances[0].Name != "node-x" || r.Instances[0].Version != "v1.2.3" || !r.Instances[0].Leader ||
		r.Instances[0].SchemaLevel != sql.SchemaLevel() {
		t.Errorf("instances %+v", r.Instances)
	}
	// Released: nobody leads, and /readyz says so.
	if err := lead.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if r := decode[readiness](t, e.doKey("GET", "/readyz", nil, "")); r.Leader.Instance != "" {
		t.Errorf("leader %+v after the unlock", r.Leader)
	}
	if m := e.scrape(); !strings.Contains(m, `chronos_build_info{goversion=`) || !strings.Contains(m, `version="v9.9.9"} 1`) {
		t.Errorf("no chronos_build_info with the version:\n%s", m)
	}
}
