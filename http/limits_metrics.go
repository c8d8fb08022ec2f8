package http

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chronoshq/chronos/sql"
)

// limitCollector exports each declared limit's state, read from the
// database at scrape time (one row per key, which an operator declared:
// the label set is bounded by what PUT /v1/limits created, never by job
// or run data). Every instance exports the same values: aggregate with
// max(), not sum().
type limitCollector struct {
	db       *sql.DB
	log      *slog.Logger
	inFlight *prometheus.Desc
	waiting  *prometheus.Desc
	tokens   *prometheus.Desc
}

func newLimitCollector(db *sql.DB, log *slog.Logger) *limitCollector {
	return &limitCollector{
		db:  db,
		log: log,
		inFlight: prometheus.NewDesc("chronos_limit_in_flight",
			"Runs of the limit's key leased or running now, cluster-wide.", []string{"key"}, nil),
		waiting: prometheus.NewDesc("chronos_limit_waiting",
			"Runs of the limit's key pending and due (held by the limit or about to be claimed), cluster-wide.",
			[]string{"key"}, nil),
		tokens: prometheus.NewDesc("chronos_limit_tokens",
			"Whole tokens left in the limit's rate bucket (only limits with a rate).", []string{"key"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *limitCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.inFlight
	ch <- c.waiting
	ch <- c.tokens
}

// Collect implements prometheus.Collector. With the database unreachable
// it exports nothing (absent series, not zeros).
func (c *limitCollector) Collect(ch chan<- prometheus.Metric) {
	if c.db == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), queueReadTimeout)
	defer cancel()
	ls, err := c.db.Limits(ctx)
	if err != nil {
		c.log.Debug("metrics: read limits", slog.String("error", err.Error()))
		return
	}
	for _, l := range ls {
		ch <- prometheus.MustNewConstMetric(c.inFlight, prometheus.GaugeValue, float64(l.InFlight), l.Key)
		ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(l.Waiting), l.Key)
		if l.TokensLeft != nil {
			ch <- prometheus.MustNewConstMetric(c.tokens, prometheus.GaugeValue, float64(*l.TokensLeft), l.Key)
		}
	}
}
