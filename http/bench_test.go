package http

import (
	"context"
	"encoding/json"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/chronoshq/chronos/sql/sqltest"
)

// BenchmarkListJobs measures GET /v1/jobs?limit=100 over real HTTP against
// a table of 100,000 jobs, at the start, middle and end of the keyset.
//
//	go test ./http -run '^$' -bench ListJobs -benchtime 3s
func BenchmarkListJobs(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	const n = 100_000
	start := time.Now()
	// Triggers off for the bulk load: 100k NOTIFYs are not what is measured.
	sqltest.WithoutTriggers(b, e.db, sqltest.Statement{SQL: `
		INSERT INTO jobs (name, cron_expr, timezone, target_url, headers, payload, next_run_at)
		SELECT 'bench-' || g, '*/5 * * * *', 'Europe/Berlin', 'http://127.0.0.1:9/hook/' || g,
		       '{"X-Env": "bench"}', ('{"n": ' || g || '}')::json, now() + (g % 300) * interval '1 second'
		FROM generate_series(1, $1::int) g`, Args: []any{n}})
	if _, err := e.db.Pool.Exec(ctx, `ANALYZE jobs`); err != nil {
		b.Fatal(err)
	}
	b.Logf("inserted %d jobs in %v", n, time.Since(start).Round(time.Millisecond))

	ts := httptest.NewServer(e.srv.Handler())
	defer ts.Close()
	client := ts.Client()
	get := func(b *testing.B, q string) (page jobList) {
		req, _ := nethttp.NewRequestWithContext(ctx, "GET", ts.URL+"/v1/jobs?"+q, nil)
		req.Header.Set("Authorization", "Bearer "+testKey)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("%d %s %v", resp.StatusCode, body, err)
		}
		if err := json.Unmarshal(body, &page); err != nil {
			b.Fatal(err)
		}
		return page
	}
	// Cursors at the middle and the end, by walking with the largest page.
	cursors := map[string]string{"start": ""}
	cur := ""
	for seen := 0; ; {
		p := get(b, "limit=500&cursor="+url.QueryEscape(cur))
		seen += len(p.Jobs)
		if p.NextCursor == nil {
			break
		}
		cur = *p.NextCursor
		switch seen {
		case n / 2:
			cursors["middle"] = cur
		case n - 200:
			cursors["end"] = cur
		}
	}
	for _, pos := range []string{"start", "middle", "end"} {
		q := "limit=100&cursor=" + url.QueryEscape(cursors[pos])
		if p := get(b, q); len(p.Jobs) != 100 || p.Jobs[0].NextRunAt == nil {
			b.Fatalf("%s: %d jobs", pos, len(p.Jobs))
		}
		b.Run(pos, func(b *testing.B) {
			b.ReportAllocs()
			t0 := time.Now()
			for b.Loop() {
				getRaw(b, client, ts.URL+"/v1/jobs?"+q)
			}
			b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "req/s")
		})
	}
	b.Run("middle-parallel", func(b *testing.B) {
		q := ts.URL + "/v1/jobs?limit=100&cursor=" + url.QueryEscape(cursors["middle"])
		t0 := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				getRaw(b, client, q)
			}
		})
		b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "req/s")
	})
}

func getRaw(b *testing.B, client *nethttp.Client, u string) {
	req, _ := nethttp.NewRequestWithContext(context.Background(), "GET", u, nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := client.Do(req)
	if err != nil {
		b.Error(err)
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Errorf("status %d", resp.StatusCode)
	}
}
