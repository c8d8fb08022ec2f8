package http

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chronoshq/chronos/sql"
)

// queueReadTimeout bounds the scrape-time read of the queue stats, so an
// unreachable database makes /metrics lose those gauges, not hang.
const queueReadTimeout = time.Second

// dbCollector is a collector that reads the database at scrape time
// (queue stats, limits, hosts): collect reads within queueReadTimeout and sends
// the metrics; without a database, or when the read fails, it exports none
// of its gauges: absent series, not misleading zeros.
type dbCollector struct {
	db      *sql.DB
	log     *slog.Logger
	what    string // what collect reads, for the log
	descs   []*prometheus.Desc
	collect func(context.Context, *sql.DB, chan<- prometheus.Metric) error
}

// Describe implements prometheus.Collector.
func (c *dbCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector. A failed read is logged at
// debug: a scrape is no place for noise.
func (c *dbCollector) Collect(ch chan<- prometheus.Metric) {
	if c.db == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), queueReadTimeout)
	defer cancel()
	if err := c.collect(ctx, c.db, ch); err != nil {
		c.log.Debug("metrics: read "+c.what, slog.String("error", err.Error()))
	}
}

// WorkProbe is implemented by a Probe that also knows the instance's
// workers (the reactor); /metrics then exports chronos_runs_in_flight and
// chronos_worker_slots.
type WorkProbe interface {
	// InFlight is how many runs this instance's workers hold now.
	InFlight() int
	// WorkerSlots is WORKER_CONCURRENCY.
	WorkerSlots() int
}

// workMetrics are the per-instance worker gauges, when probe knows them.
func workMetrics(probe Probe) []prometheus.Collector {
	w, ok := probe.(WorkProbe)
	if !ok {
		return nil
	}
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "chronos_runs_in_flight",
			Help: "Runs this instance's workers hold right now (claimed, not yet handed back)."},
			func() float64 { return float64(w.InFlight()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "chronos_worker_slots",
			Help: "WORKER_CONCURRENCY: the most runs this instance holds at once."},
			func() float64 { return float64(w.WorkerSlots()) }),
	}
}

// newQueueCollector exports the cluster-wide queue gauges that the leader
// computes every few seconds (reactor/queuestats.go) and stores in the
// queue_stats row: every instance reads that row at scrape time with one
// primary-key lookup, so every instance exports the same values and none
// counts runs itself. Aggregate them with max(), not sum(). With no stats
// stored yet it exports none of its gauges.
func newQueueCollector(db *sql.DB, log *slog.Logger) *dbCollector {
	runs := prometheus.NewDesc("chronos_queue_runs",
		"Runs in each active status (pending, leased, running), cluster-wide, as the leader last counted them.",
		[]string{"status"}, nil)
	due := prometheus.NewDesc("chronos_queue_due_runs",
		"Pending runs whose available_at has passed (claimable now), cluster-wide, as the leader last counted them.",
		nil, nil)
	oldest := prometheus.NewDesc("chronos_queue_oldest_pending_seconds",
		"How long the oldest due pending run had waited past its available_at when the leader last looked; 0 when none was due.",
		nil, nil)
	age := prometheus.NewDesc("chronos_queue_stats_age_seconds",
		"Seconds since the leader last computed the chronos_queue_* gauges (database clock); growing means no leader is counting.",
		nil, nil)
	collect := func(ctx context.Context, db *sql.DB, ch chan<- prometheus.Metric) error {
		s, ok, err := db.QueueStats(ctx)
		if err != nil || !ok {
			return err
		}
		ch <- prometheus.MustNewConstMetric(runs, prometheus.GaugeValue, float64(s.Pending), "pending")
		ch <- prometheus.MustNewConstMetric(runs, prometheus.GaugeValue, float64(s.Leased), "leased")
		ch <- prometheus.MustNewConstMetric(runs, prometheus.GaugeValue, float64(s.Running), "running")
		ch <- prometheus.MustNewConstMetric(due, prometheus.GaugeValue, float64(s.Due))
		ch <- prometheus.MustNewConstMetric(oldest, prometheus.GaugeValue, s.OldestDue.Seconds())
		ch <- prometheus.MustNewConstMetric(age, prometheus.GaugeValue, s.Age.Seconds())
		return nil
	}
	return &dbCollector{db: db, log: log, what: "queue stats", descs: []*prometheus.Desc{runs, due, oldest, age}, collect: collect}
}
