package sql_test

import (
	"testing"
	"time"

	"github.com/chronoshq/chronos/sql/sqltest"
)

// BenchmarkMaterializeHerd measures how fast the materializer prepares a
// herd: 20,000 cron jobs due at one instant, materialized ahead in batches
// of 2,000 (the reactor's), as the leader does a lookahead before the top
// of the hour. The metric is jobs/s.
//
//	go test -run '^$' -bench MaterializeHerd -benchtime 1x ./sql/
func BenchmarkMaterializeHerd(b *testing.B) {
	const herd, batch = 20000, 2000
	for range b.N {
		b.StopTimer()
		db := sqltest.New(b)
		ctx := b.Context()
		t0 := dbNow(b, db).Truncate(time.Second).Add(time.Hour)
		if _, err := db.Pool.Exec(ctx, `
			INSERT INTO jobs (name, cron_expr, timezone, target_url, next_run_at)
			SELECT 'herd-' || g, $1, 'UTC', 'http://127.0.0.1:9/h/' || g, $2 FROM generate_series(1, $3::int) g`,
			herdCron(t0), t0, herd); err != nil {
			b.Fatal(err)
		}
		if _, err := db.Pool.Exec(ctx, "VACUUM ANALYZE"); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		created := 0
		for {
			res, err := db.Materialize(ctx, t0.Add(-time.Second), 2*time.Second, batch)
			if err != nil {
				b.Fatal(err)
			}
			created += res.Created
			if res.Jobs < batch {
				break
			}
		}
		el := time.Since(start)
		b.StopTimer()
		if created != herd {
			b.Fatalf("created %d runs, want %d", created, herd)
		}
		b.ReportMetric(float64(herd)/el.Seconds(), "jobs/s")
		b.StartTimer()
	}
}

func herdCron(t time.Time) string {
	return t.Format("5 4 15 2 1") + " *"
}
