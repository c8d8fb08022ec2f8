package http

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chronoshq/chronos/sql"
)

// newLimitCollector exports each declared limit's state, read from the
// database at scrape time (one row per key, which an operator declared:
// the label set is bounded by what PUT /v1/limits created, never by job
// or run data). Every instance exports the same values: aggregate with
// max(), not sum().
func newLimitCollector(db *sql.DB, log *slog.Logger) *dbCollector {
	inFlight := prometheus.NewDesc("chronos_limit_in_flight",
		"Runs of the limit's key leased or running now, cluster-wide.", []string{"key"}, nil)
	waiting := prometheus.NewDesc("chronos_limit_waiting",
		"Runs of the limit's key pending and due (held by the limit or about to be claimed), cluster-wide.",
		[]string{"key"}, nil)
	tokens := prometheus.NewDesc("chronos_limit_tokens",
		"Whole tokens left in the limit's rate bucket (only limits with a rate).", []string{"key"}, nil)
	collect := func(ctx context.Context, db *sql.DB, ch chan<- prometheus.Metric) error {
		ls, err := db.Limits(ctx)
		if err != nil {
			return err
		}
		for _, l := range ls {
			ch <- prometheus.MustNewConstMetric(inFlight, prometheus.GaugeValue, float64(l.InFlight), l.Key)
			ch <- prometheus.MustNewConstMetric(waiting, prometheus.GaugeValue, float64(l.Waiting), l.Key)
			if l.TokensLeft != nil {
				ch <- prometheus.MustNewConstMetric(tokens, prometheus.GaugeValue, float64(*l.TokensLeft), l.Key)
			}
		}
		return nil
	}
	return &dbCollector{db: db, log: log, what: "limits", descs: []*prometheus.Desc{inFlight, waiting, tokens}, collect: collect}
}
