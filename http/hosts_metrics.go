package http

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chronoshq/chronos/sql"
)

// newHostCollector exports how many origins hold their runs back now, read
// from the hosts table at scrape time (sql.HostCounts). The gauges carry no
// origin label: origins are as many as the targets jobs name, an unbounded
// set, and GET /v1/hosts says which they are. Every instance exports the
// same values: aggregate with max(), not sum().
func newHostCollector(db *sql.DB, log *slog.Logger) *dbCollector {
	open := prometheus.NewDesc("chronos_host_breakers_open",
		"Origins whose circuit breaker is open or probing now (their runs wait for the cooldown and its probe), cluster-wide.",
		nil, nil)
	deferred := prometheus.NewDesc("chronos_hosts_deferred",
		"Origins whose Retry-After deferral (a 429/503 answer) holds their runs now, cluster-wide.", nil, nil)
	collect := func(ctx context.Context, db *sql.DB, ch chan<- prometheus.Metric) error {
		c, err := db.HostCounts(ctx)
		if err != nil {
			return err
		}
		ch <- prometheus.MustNewConstMetric(open, prometheus.GaugeValue, float64(c.BreakersOpen))
		ch <- prometheus.MustNewConstMetric(deferred, prometheus.GaugeValue, float64(c.Deferred))
		return nil
	}
	return &dbCollector{db: db, log: log, what: "hosts", descs: []*prometheus.Desc{open, deferred}, collect: collect}
}
