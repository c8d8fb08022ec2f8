package sql_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chronoshq/chronos/sql"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// BenchmarkLimitedClaimComplete: claim a batch of runs (32, and 160 as a
// burst's claims are) and complete them, over runs spread across 100
// jobs, on two databases in turn (so a loaded machine slows both alike):
// one whose jobs name no limit, one whose jobs each name their own key
// limited to 10. What a limit costs the delivery path's statements, as a
// ratio.
func BenchmarkLimitedClaimComplete(b *testing.B) {
	for _, size := range []int{32, 160} {
		b.Run(fmt.Sprintf("claim=%d", size), func(b *testing.B) { benchLimitedClaimComplete(b, size) })
	}
}

func benchLimitedClaimComplete(b *testing.B, size int) {
	ctx := b.Context()
	setup := func(limited bool) *sql.DB {
		db := sqltest.New(b)
		var jobs []int64
		for i := range 100 {
			j := cronJob("0 0 1 1 *")
			if limited {
				key := fmt.Sprintf("k%03d", i)
				putLimit(b, db, key, ptr(10), nil, nil)
				j.LimitKey = &key
			}
			jobs = append(jobs, mustCreate(b, db, j).ID)
		}
		if _, err := db.Pool.Exec(ctx, `
			INSERT INTO job_runs (job_id, scheduled_at, trigger, available_at)
			SELECT ($1::bigint[])[1 + g % 100], now(), 'manual', now() - interval '1 second'
			  FROM generate_series(0, $2 - 1) g`, jobs, size*b.N); err != nil {
			b.Fatal(err)
		}
		return db
	}
	dbs := []*sql.DB{setup(false), setup(true)}
	var took [2]time.Duration
	b.ResetTimer()
	for range b.N {
		for k, db := range dbs {
			t0 := time.Now()
			got, err := db.Claim(ctx, "w", size, time.Minute)
			if err != nil || len(got) != size {
				b.Fatalf("claim: %d, %v", len(got), err)
			}
			succeed(b, db, got)
			took[k] += time.Since(t0)
		}
	}
	b.ReportMetric(float64(took[0].Microseconds())/float64(b.N), "free-µs")
	b.ReportMetric(float64(took[1].Microseconds())/float64(b.N), "limited-µs")
	b.ReportMetric(100*float64(took[0])/float64(took[1]), "free/limited-%")
}
