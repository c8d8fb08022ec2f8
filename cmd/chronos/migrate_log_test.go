package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"

	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// TestMigrateLogsJSON: with LOG_FORMAT=json everything `chronos migrate`
// logs is JSON, the migrations' own notices included (issue 23: they went
// through the default logger): a database at migration 7 with two jobs of
// one name is migrated, and migration 008's rename notice arrives as a
// JSON "migration notice" record, next to the "applying migration" ones.
func TestMigrateLogsJSON(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := sqltest.NewEmptyURL(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	m, err := migrate.NewMigrator(ctx, conn, "public.chronos_schema_version")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadMigrations(sql.Migrations()); err != nil {
		t.Fatal(err)
	}
	if err := m.MigrateTo(ctx, 7); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := conn.Exec(ctx, `INSERT INTO jobs (name, cron_expr, target_url) VALUES ('twin', '* * * * *', 'http://x')`); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close(ctx)

	code, out, errOut := runCmd(t, map[string]string{"DATABASE_URL": dsn, "LOG_FORMAT": "json"}, "migrate")
	if code != 0 {
		t.Fatalf("chronos migrate: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	var applying, notice int
	for _, line := range strings.Split(strings.TrimSpace(errOut), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("a line of LOG_FORMAT=json output is not JSON: %q (%v)\nstderr:\n%s", line, err, errOut)
		}
		switch rec["msg"] {
		case "applying migration":
			applying++
		case "migration notice":
			if msg, _ := rec["message"].(string); strings.Contains(msg, "renamed from 'twin'") {
				notice++
			}
		}
	}
	if applying == 0 || notice != 1 {
		t.Fatalf("%d \"applying migration\" records, %d rename notices (want some, and 1):\n%s", applying, notice, errOut)
	}
}
