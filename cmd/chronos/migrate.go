package main

import (
	"context"
	"fmt"

	"github.com/chronoshq/chronos/sql"
)

func init() {
	register(&command{name: "migrate", summary: "apply the database migrations and exit", run: runMigrate})
}

func runMigrate(ctx context.Context, args []string, env *environ) error {
	fs := newFlagSet(env, "migrate", "", `Applies the embedded database migrations to DATABASE_DIRECT_URL (default
DATABASE_URL) and exits. It is
safe to run while instances are up, or from several places at once (an
advisory lock serialises them). `+"`chronos serve`"+` does the same at startup
unless MIGRATE_ON_START=false.

Run it ahead of a rollout: migrations are written so that the previous
release keeps working against the new schema. Every statement runs under a
short lock_timeout and a migration that times out waiting for a lock is
retried, so it never queues the claims and completions of running
instances behind it for long.

Environment: DATABASE_URL (required), DATABASE_DIRECT_URL,
DATABASE_CONNECT_TIMEOUT (10s), LOG_LEVEL, LOG_FORMAT.`)
	if err := fs.parse(args); err != nil {
		return err
	}
	cfg, err := loadEnv(env.getenv, varsNamed("DATABASE_URL", "DATABASE_DIRECT_URL", "DATABASE_CONNECT_TIMEOUT", "LOG_LEVEL", "LOG_FORMAT"))
	if err != nil {
		return err
	}
	cfg.InstanceID = "chronos-migrate"
	log := newLogger(env.stderr, cfg.LogLevel, cfg.LogFormat).With("component", "migrate")
	db, err := connectDSN(ctx, cfg, cfg.directURL(), false, log) // waits for a database that is still starting
	if err != nil {
		return err
	}
	pooled, err := db.BehindPooler(ctx)
	db.Close()
	if err != nil {
		return err
	}
	if pooled {
		return fmt.Errorf("migrate: %s goes through a connection pooler: migrations need a session of their own; set DATABASE_DIRECT_URL to Postgres itself",
			map[bool]string{true: "DATABASE_DIRECT_URL", false: "DATABASE_URL"}[cfg.DatabaseDirectURL != ""])
	}
	if err := sql.MigrateWith(ctx, cfg.directURL(), sql.MigrateOptions{Log: log}); err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	fmt.Fprintln(env.stdout, "migrations applied")
	return nil
}
