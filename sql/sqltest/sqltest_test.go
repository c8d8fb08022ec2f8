package sqltest

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestNewGivesMigratedIsolatedDatabases(t *testing.T) {
	t.Parallel()
	a, b := New(t), New(t)
	ctx := context.Background()
	if _, err := a.Pool.Exec(ctx, `INSERT INTO jobs (name, cron_expr, target_url) VALUES ('x', '* * * * *', 'http://x')`); err != nil {
		t.Fatalf("insert into a: %v", err)
	}
	var n int
	if err := b.Pool.QueryRow(ctx, "SELECT count(*) FROM jobs").Scan(&n); err != nil {
		t.Fatalf("count in b: %v", err)
	}
	if n != 0 {
		t.Fatalf("b sees %d jobs of a", n)
	}
}

func TestNewEmptyURLHasNoSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, NewEmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'jobs'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatal("empty database has a jobs table")
	}
}

func TestDatabaseDroppedAtCleanup(t *testing.T) {
	t.Parallel()
	var dsn string
	t.Run("inner", func(t *testing.T) { dsn = NewURL(t) })
	if dsn == "" {
		t.Fatal("no database was created")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err == nil {
		conn.Close(ctx)
		t.Fatal("test database still exists after cleanup")
	}
	if !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("connect to dropped database: %v", err)
	}
}

// fakeT records a Fatalf and stops the goroutine, like testing.T does.
type fakeT struct {
	testing.TB
	msg string
}

func (f *fakeT) Helper()        { f.TB.Helper() }
func (f *fakeT) Cleanup(func()) {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestFailsWithHowToWhenUnreachable(t *testing.T) {
	for _, dsn := range []string{"", "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=2"} {
		t.Setenv(EnvVar, dsn)
		f := &fakeT{TB: t}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); NewURL(f) }()
		wg.Wait()
		if !strings.Contains(f.msg, "make test") || !strings.Contains(f.msg, "TEST_DATABASE_URL=postgres://") {
			t.Fatalf("dsn %q: NewURL failed with %q, want a message saying how to get a server", dsn, f.msg)
		}
	}
}

func TestStale(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	names := []string{ // newest first
		"chronos_tmpl_b", "chronos_tmpl_aaaa", "chronos_tmpl_c", "chronos_tmpl_d_build", "chronos_tmpl_aaaa_build",
		"chronos_tmpl_e", "chronos_tmpl_f", "chronos_tmpl_g",
		"chronos_test_" + "990000" + "_ab", "chronos_test_" + "999999" + "_cd", "chronos_test_garbage", "postgres",
	}
	got := stale(names, "chronos_tmpl_aaaa", now)
	// Four templates of other versions survive (b, c, d_build, e): another
	// checkout may be cloning them right now.
	want := []string{"chronos_tmpl_f", "chronos_tmpl_g", "chronos_test_990000_ab"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("stale = %v, want %v", got, want)
	}
}

// TestTemplateDroppedUnderneath: a template that another checkout dropped
// after this process checked it is looked for (and rebuilt) again instead of
// failing the test. It uses a private template, so the real one, shared
// with other checkouts, is never dropped here.
func TestTemplateDroppedUnderneath(t *testing.T) {
	private := templatePrefix + "t" + randomHex(6)
	mu.Lock()
	saved, savedReady := templateName, ready
	templateName, ready = func() string { return private }, ""
	mu.Unlock()
	t.Cleanup(func() {
		mu.Lock()
		templateName, ready = saved, savedReady
		mu.Unlock()
		if err := drop(os.Getenv(EnvVar), private); err != nil {
			t.Errorf("drop %s: %v", private, err)
		}
	})
	New(t) // builds the private template and remembers it
	if err := drop(os.Getenv(EnvVar), private); err != nil {
		t.Fatal(err)
	}
	New(t)
}
