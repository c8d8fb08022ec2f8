package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chronoshq/chronos/internal/pgdsn"
)

// createDB creates an empty database on the server of admin and returns
// its name and DSN.
func createDB(ctx context.Context, admin string) (name, dsn string, err error) {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", "", fmt.Errorf("connect to %s (set DATABASE_URL or TEST_DATABASE_URL): %w", redactDSN(admin), err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	buf := make([]byte, 4)
	_, _ = rand.Read(buf)
	name = "chronos_bench_" + hex.EncodeToString(buf)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", "", fmt.Errorf("create database %s: %w", name, err)
	}
	dsn, err = pgdsn.WithDatabase(admin, name)
	if err != nil {
		_ = dropDB(admin, name)
		return "", "", err
	}
	return name, dsn, nil
}

// dropDB drops a throwaway database, closing what still uses it.
func dropDB(admin, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	return err
}

// redactDSN hides a URL's password in messages.
func redactDSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		return u.Redacted()
	}
	return "the database server"
}

// Why a DSN cannot go through the bench's counting proxy, which reads the
// protocol in plain text.
var (
	errNoTCP = errors.New("the database is not reached over TCP")
	errTLS   = errors.New("the connection may use TLS (sslmode is not disable), which the counting proxy cannot read: add sslmode=disable to the URL")
)

// dsnHostPort is the TCP address a DSN connects to in plain text.
func dsnHostPort(dsn string) (string, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "", err
	}
	switch {
	case strings.HasPrefix(cfg.Host, "/"):
		return "", errNoTCP
	case cfg.TLSConfig != nil:
		// sslmode prefer (libpq's default, so a URL without sslmode) is
		// TLS whenever the server offers it.
		return "", errTLS
	}
	return net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), nil
}
