// Package sqltest gives each test its own freshly migrated Chronos
// database on the Postgres server named by TEST_DATABASE_URL.
//
// The first test of a process makes sure a template database exists that
// holds the current migrations (named by sql.SchemaHash, so a changed
// migration gets a new one); every test then clones it with CREATE
// DATABASE ... TEMPLATE, which takes milliseconds, and drops its clone WITH
// (FORCE) at cleanup. Template builds are serialised across test processes
// (go test runs packages in parallel) by an advisory lock on the server's
// maintenance database, and a template is built under a temporary name and
// renamed when complete, so a crashed build never leaves a half-migrated
// template behind.
//
// There is no skipping: without a reachable server the test fails and says
// how to get one.
package sqltest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/internal/pgdsn"
	"github.com/chronoshq/chronos/sql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/tern/v2/migrate"
)

// EnvVar names the environment variable holding the server's DSN.
const EnvVar = "TEST_DATABASE_URL"

const howTo = "`make test` finds or starts a Postgres for you; or set " +
	"TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

const (
	templatePrefix = "chronos_tmpl_"
	testPrefix     = "chronos_test_"
	// buildLockKey serialises template builds across processes.
	buildLockKey = int64(0x63687274_6d706c00) // "chrtmpl"
	// staleAfter is when a test database left by a killed test run is
	// dropped by a later one.
	staleAfter = 2 * time.Hour
	// keepOtherTemplates is how many templates of other migration versions
	// survive, the newest ones: checkouts with different migrations share a
	// server, and dropping each other's template on every run would fail
	// the clones in flight and rebuild templates over and over.
	keepOtherTemplates = 4
)

var (
	mu    sync.Mutex
	ready string // the template known to exist, once checked in this process

	strategyKnown bool // useFileCopy is set (see fileCopy)
	useFileCopy   bool
	// templateName names the template of the current migrations; a test
	// swaps it for a private one.
	templateName = func() string { return templatePrefix + sql.SchemaHash()[:16] }
)

// New returns an open pool on a fresh migrated database, closed and
// dropped at cleanup.
func New(t testing.TB) *sql.DB {
	t.Helper()
	return Open(t, NewURL(t), "sqltest") // closed before the drop: its cleanup is registered after it
}

// Open opens a pool on dsn whose sessions are named instance, closed at
// cleanup: a test's own pool on a database it made (NewURL, NewEmptyURL
// once migrated), as an instance of its own would have.
func Open(t testing.TB, dsn, instance string) *sql.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := sql.Open(ctx, dsn, instance)
	if err != nil {
		t.Fatalf("sqltest: open %q: %v", instance, err)
	}
	t.Cleanup(db.Close)
	return db
}

// NewURL returns the DSN of a fresh migrated database, dropped at cleanup.
func NewURL(t testing.TB) string {
	t.Helper()
	return create(t, true)
}

// NewEmptyURL returns the DSN of a fresh database with no schema at all,
// dropped at cleanup: for testing the migrations themselves.
func NewEmptyURL(t testing.TB) string {
	t.Helper()
	return create(t, false)
}

// Now reads the database's clock (db.Now), the one every scheduling
// decision uses, in UTC.
func Now(t testing.TB, db *sql.DB) time.Time {
	t.Helper()
	now, err := db.Now(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return now
}

// Run reads the run id with its attempts (db.Run).
func Run(t testing.TB, db *sql.DB, id int64) *chronos.Run {
	t.Helper()
	r, err := db.Run(context.Background(), id)
	if err != nil {
		t.Fatalf("run %d: %v", id, err)
	}
	return r
}

// Connect opens a plain connection to dsn for a test's own statements,
// closed at cleanup.
func Connect(t testing.TB, ctx context.Context, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// Leader opens instance's leadership connection to dsn, closed at
// cleanup.
func Leader(t testing.TB, ctx context.Context, dsn, instance string) *sql.LeaderConn {
	t.Helper()
	l, err := sql.ConnectLeader(ctx, dsn, instance)
	if err != nil {
		t.Fatalf("connect leader %s: %v", instance, err)
	}
	t.Cleanup(func() { _ = l.Close(context.Background()) })
	return l
}

// Leading is Leader holding the leadership lock: it fails t when another
// connection holds it or this binary may not lead.
func Leading(t testing.TB, ctx context.Context, dsn, instance string) *sql.LeaderConn {
	t.Helper()
	l := Leader(t, ctx, dsn, instance)
	if ok, err := l.TryLock(ctx); err != nil || !ok {
		t.Fatalf("%s takes the leadership lock: %v %v", instance, ok, err)
	}
	return l
}

func create(t testing.TB, migrated bool) string {
	t.Helper()
	base := os.Getenv(EnvVar)
	if base == "" {
		t.Fatalf("sqltest: %s is not set: the tests need a real Postgres. %s", EnvVar, howTo)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := connect(ctx, base)
	if err != nil {
		t.Fatalf("sqltest: cannot reach Postgres at %s=%s: %v. %s", EnvVar, redact(base), err, howTo)
	}
	defer admin.Close(context.Background())

	name := testPrefix + strconv.FormatInt(time.Now().Unix(), 10) + "_" + randomHex(6)
	// Another checkout with other migrations may drop our template between
	// the check and the clone (see keepOtherTemplates): check again.
	for try := 1; ; try++ {
		stmt := "CREATE DATABASE " + ident(name)
		if fc, err := fileCopy(ctx, admin); err != nil {
			t.Fatalf("sqltest: %v", err)
		} else if fc {
			stmt += " STRATEGY FILE_COPY"
		}
		if migrated {
			tmpl, err := ensureTemplate(ctx, t, admin, base)
			if err != nil {
				t.Fatalf("sqltest: prepare template database: %v", err)
			}
			stmt += " TEMPLATE " + ident(tmpl)
		}
		_, err := admin.Exec(ctx, stmt)
		if err == nil {
			break
		}
		if !migrated || !templateGone(err) || try == 5 {
			t.Fatalf("sqltest: create test database: %v", err)
		}
		forgetTemplate()
	}
	t.Cleanup(func() {
		if err := drop(base, name); err != nil {
			t.Errorf("sqltest: drop test database %s: %v", name, err)
		}
	})
	dsn, err := pgdsn.WithDatabase(base, name)
	if err != nil {
		t.Fatalf("sqltest: %v", err)
	}
	return dsn
}

// fileCopy says whether clones copy the template's files (CREATE
// DATABASE ... STRATEGY FILE_COPY) rather than WAL-log each of its pages
// (WAL_LOG, Postgres 15's default): on a server with fsync off (the
// throwaway cluster make test starts) a file copy costs about half the
// CPU and none of the WAL (a whole test run cloned some 300 databases and
// wrote 1.5 GB of WAL doing it, a sixth of the run's Postgres time); on a
// durable server each one would force a checkpoint, so there the default
// stays. Asked once per process.
func fileCopy(ctx context.Context, admin *pgx.Conn) (bool, error) {
	mu.Lock()
	defer mu.Unlock()
	if strategyKnown {
		return useFileCopy, nil
	}
	var version int
	var fsync string
	if err := admin.QueryRow(ctx, "SELECT current_setting('server_version_num')::int, current_setting('fsync')").Scan(&version, &fsync); err != nil {
		return false, fmt.Errorf("read server version and fsync: %w", err)
	}
	strategyKnown, useFileCopy = true, version >= 150000 && fsync == "off"
	return useFileCopy, nil
}

// templateGone reports a CREATE DATABASE whose template does not exist
// (any more).
func templateGone(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "3D000"
}

// forgetTemplate makes the next ensureTemplate look for the template again.
func forgetTemplate() {
	mu.Lock()
	ready = ""
	mu.Unlock()
}

func ensureTemplate(ctx context.Context, t testing.TB, admin *pgx.Conn, base string) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	name := templateName()
	if ready == name {
		return name, nil
	}
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock($1)", buildLockKey); err != nil {
		return "", fmt.Errorf("take build lock: %w", err)
	}
	defer func() {
		// The session ends right after; unlocking explicitly keeps the
		// lock's life obvious.
		if _, err := admin.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", buildLockKey); err != nil {
			t.Logf("sqltest: release build lock: %v", err)
		}
	}()
	dropStale(ctx, t, admin, name)
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", fmt.Errorf("look for template: %w", err)
	}
	if !exists {
		if err := build(ctx, admin, base, name); err != nil {
			return "", err
		}
	}
	ready = name
	return name, nil
}

// build migrates a database under a temporary name and renames it to name
// once complete.
func build(ctx context.Context, admin *pgx.Conn, base, name string) error {
	tmp := name + "_build"
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(tmp)+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop unfinished template: %w", err)
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+ident(tmp)); err != nil {
		return fmt.Errorf("create template: %w", err)
	}
	dsn, err := pgdsn.WithDatabase(base, tmp)
	if err != nil {
		return err
	}
	if err := sql.MigrateWith(ctx, dsn, sql.MigrateOptions{Log: slog.New(slog.DiscardHandler)}); err != nil {
		return fmt.Errorf("migrate template: %w", err)
	}
	// The migration's backend exits just after its client hangs up; RENAME
	// and CREATE DATABASE ... TEMPLATE both want nobody connected.
	if err := waitNoSessions(ctx, admin, tmp); err != nil {
		return err
	}
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+ident(tmp)+" RENAME TO "+ident(name)); err != nil {
		return fmt.Errorf("rename template: %w", err)
	}
	// Nobody may connect to the template: a session there would make every
	// clone fail with "being accessed by other users".
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+ident(name)+" WITH ALLOW_CONNECTIONS false"); err != nil {
		return fmt.Errorf("seal template: %w", err)
	}
	return nil
}

func waitNoSessions(ctx context.Context, admin *pgx.Conn, db string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = $1", db).Scan(&n); err != nil {
			return fmt.Errorf("count sessions on %s: %w", db, err)
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d sessions still connected to %s", n, db)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// dropStale drops the older templates of other migration versions (all but
// the newest keepOtherTemplates) and test databases left behind by killed
// test runs. Failures are logged, not fatal: they cost disk, not
// correctness.
func dropStale(ctx context.Context, t testing.TB, admin *pgx.Conn, keep string) {
	// Newest first: database oids grow with creation.
	rows, err := admin.Query(ctx, "SELECT datname FROM pg_database WHERE datname LIKE 'chronos\\_tmpl\\_%' OR datname LIKE 'chronos\\_test\\_%' ORDER BY oid DESC")
	if err != nil {
		t.Logf("sqltest: list stale databases: %v", err)
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Logf("sqltest: list stale databases: %v", err)
		return
	}
	for _, n := range stale(names, keep, time.Now()) {
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(n)+" WITH (FORCE)"); err != nil {
			t.Logf("sqltest: drop stale database %s: %v", n, err)
		}
	}
}

// stale picks, from names (newest first), the databases to drop: templates
// of other migration versions beyond the newest keepOtherTemplates, and
// test databases older than staleAfter.
func stale(names []string, keep string, now time.Time) []string {
	var out []string
	others := 0
	for _, name := range names {
		if strings.HasPrefix(name, templatePrefix) {
			if name == keep || name == keep+"_build" {
				continue
			}
			if others++; others > keepOtherTemplates {
				out = append(out, name)
			}
			continue
		}
		if staleTest(name, now) {
			out = append(out, name)
		}
	}
	return out
}

// staleTest reports a test database left behind for longer than staleAfter.
func staleTest(name string, now time.Time) bool {
	rest, ok := strings.CutPrefix(name, testPrefix)
	if !ok {
		return false
	}
	ts, _, ok := strings.Cut(rest, "_")
	if !ok {
		return false
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return false
	}
	return now.Sub(time.Unix(sec, 0)) > staleAfter
}

func drop(base, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := connect(ctx, base)
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(name)+" WITH (FORCE)")
	return err
}

// connect opens an admin connection. A server that is full (too many
// clients: test packages run in parallel) or still starting is retried
// for a while; an unreachable one fails at once.
func connect(ctx context.Context, dsn string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse dsn: %w", err)
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 5 * time.Second
	}
	cfg.RuntimeParams["application_name"] = "chronos-sqltest"
	deadline := time.Now().Add(busyRetryFor)
	for delay := 20 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err == nil || !busy(err) || time.Now().After(deadline) {
			return conn, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(delay):
		}
	}
}

// busyRetryFor is how long connect waits for a full server.
const busyRetryFor = time.Minute

// busy reports a server that refuses connections for now: too many
// clients (53300), or starting up (57P03).
func busy(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "53300" || pe.Code == "57P03")
}

func ident(s string) string { return pgx.Identifier{s}.Sanitize() }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// redact hides a password in a URL DSN.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return dsn
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// MigrateTo is a tern migrator over Chronos' migrations on conn (to a
// database such as NewEmptyURL gives), once it has taken the schema to
// version: a test of one migration fills the database as the version
// before it had it, then migrates on with the migrator.
func MigrateTo(t testing.TB, ctx context.Context, conn *pgx.Conn, version int32) *migrate.Migrator {
	t.Helper()
	m, err := migrate.NewMigrator(ctx, conn, "public.chronos_schema_version")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadMigrations(sql.Migrations()); err != nil {
		t.Fatal(err)
	}
	if err := m.MigrateTo(ctx, version); err != nil {
		t.Fatal(err)
	}
	return m
}

// Statement is one SQL statement and its arguments, for WithoutTriggers.
type Statement struct {
	SQL  string
	Args []any
}

// WithoutTriggers runs stmts in one transaction with the tables' triggers
// off (session_replication_role = replica), as a bulk load or the restore
// of a partial dump would, and commits; an error fails tb. The tests that
// use it do the triggers' work themselves, or mean it left undone.
func WithoutTriggers(tb testing.TB, db *sql.DB, stmts ...Statement) {
	tb.Helper()
	ctx := context.Background()
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	// Released before a Fatal's cleanup closes the pool, which would wait
	// for it.
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SET LOCAL session_replication_role = replica"); err != nil {
		tb.Fatal(err)
	}
	for i, s := range stmts {
		if _, err := tx.Exec(ctx, s.SQL, s.Args...); err != nil {
			tb.Fatalf("statement %d without triggers: %v", i+1, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		tb.Fatal(err)
	}
}
