package sql

import (
	"testing"
	"time"

	"github.com/chronoshq/chronos"
)

// BenchmarkPlanCronJob is the materializer's pure work for one due cron
// job in a zone: build its schedule, take one occurrence, find the next.
func BenchmarkPlanCronJob(b *testing.B) {
	expr := "0 3 * * *"
	now := time.Date(2026, 12, 3, 2, 0, 0, 0, time.UTC)
	next := now.Add(time.Second)
	j := &chronos.Job{ID: 1, CronExpr: &expr, Timezone: "Europe/Berlin", NextRunAt: &next, Overlap: chronos.OverlapAllow,
		Misfire: chronos.MisfireOne, Exclude: []chronos.DateRange{}}
	for b.Loop() {
		if p := plan(j, now, now.Add(2*time.Second), false, false, time.Time{}); len(p.runs) != 1 {
			b.Fatal(p)
		}
	}
}
