package sql_test

import (
	"os"
	"strings"
	"testing"

	"github.com/chronoshq/chronos/internal/fixtures"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// originRegexpSQL is chronos_origin as migration 027 wrote it, renamed
// origin_027: the regexp that migration 030's fast path must agree with.
// It is read from the migration itself, so the test checks against what
// 027 shipped, not against a copy of it.
func originRegexpSQL(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("migrations/027_origin_plpgsql.sql")
	if err != nil {
		t.Fatalf("read migration 027: %v", err)
	}
	const head = "CREATE OR REPLACE FUNCTION chronos_origin(url text)"
	if !strings.Contains(string(b), head) {
		t.Fatalf("migration 027 no longer has %q", head)
	}
	return strings.Replace(string(b), head, "CREATE FUNCTION origin_027(url text)", 1)
}

// TestChronosOriginFastPathAgrees: migration 030's chronos_origin, which
// takes the common URLs apart without a regexp, gives what 027's regexp
// gives for every case of testdata/origins.json and for URLs built from
// the parts where the two could differ (scheme case, userinfo, brackets,
// empty and non-numeric ports, '@', ':', '/', '?', '#' after the host), so
// the index jobs_origin_idx built with 027's function stays valid.
func TestChronosOriginFastPathAgrees(t *testing.T) {
	t.Parallel()
	db := sqltest.New(t)
	ctx := t.Context()
	if _, err := db.Pool.Exec(ctx, originRegexpSQL(t)); err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, c := range fixtures.Origins(t, "..") {
		urls = append(urls, c.URL)
	}
	schemes := []string{"http://", "https://", "HTTP://", "Https://", "ftp://", "http:/", "http:", "", "https//", "httpx://"}
	users := []string{"", "u@", "u:p@", "@", "a@b@"}
	hosts := []string{"example.com", "Ex.COM", "127.0.0.1", "[::1]", "[::1", "::1]", "", "h%20x", "ÜBER.de", "a b", "x\ny"}
	ports := []string{"", ":", ":80", ":443", ":0099", ":8a", ":a8", "::", ":65536", ": 1"}
	tails := []string{"", "/", "/a@b", "?x=@", "#f", "/p:q", "?:9", "#[x]", "/[::1]:8"}
	for _, s := range schemes {
		for _, u := range users {
			for _, h := range hosts {
				for _, p := range ports {
					for _, tl := range tails {
						urls = append(urls, s+u+h+p+tl)
					}
				}
			}
		}
	}
	rows, err := db.Pool.Query(ctx, `
		SELECT u, chronos_origin(u), origin_027(u) FROM unnest($1::text[]) u
		 WHERE chronos_origin(u) IS DISTINCT FROM origin_027(u)`, urls)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var (
			u         string
			got, want *string
		)
		if err := rows.Scan(&u, &got, &want); err != nil {
			t.Fatal(err)
		}
		if n++; n <= 20 {
			t.Errorf("chronos_origin(%q) = %v, migration 027's %v", u, deref(got), deref(want))
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n > 0 {
		t.Errorf("%d of %d URLs disagree", n, len(urls))
	}
}

func deref(s *string) string {
	if s == nil {
		return "NULL"
	}
	return `"` + *s + `"`
}
