package sql_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql/sqltest"
)

// BenchmarkCreateJobs measures the batch route at the data layer, without
// HTTP: b.N jobs shaped like `chronos bench create`'s batch jobs (a
// one-shot with a payload), created 1,000 a call (POST /v1/jobs/batch's
// most) by one writer. The metric is jobs/s; what a job costs Postgres
// and Go apart is `chronos bench create`'s to report.
//
//	go test -run '^$' -bench CreateJobs -benchtime 30000x ./sql/
func BenchmarkCreateJobs(b *testing.B) {
	db := sqltest.New(b)
	ctx := b.Context()
	runAt := time.Now().Add(24 * time.Hour)
	payload := []byte(`{"n":1}`)
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(1000, b.N-done)
		jobs := make([]*chronos.Job, n)
		for i := range jobs {
			jobs[i] = &chronos.Job{Name: fmt.Sprintf("bench-%d", done+i), RunAt: &runAt,
				TargetURL: "http://127.0.0.1:9/c", Payload: payload}
		}
		if err := db.CreateJobs(ctx, jobs); err != nil {
			b.Fatal(err)
		}
		done += n
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}
