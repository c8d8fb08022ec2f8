package http

import (
	"context"
	"log/slog"
	nethttp "net/http"
	"slices"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/bus"
	"github.com/chronoshq/chronos/sql"
)

// latencyBuckets cover a millisecond-scale scheduler: 0.5 ms to a minute.
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// metrics are one Server's Prometheus collectors, on a private registry so
// that many servers (tests, one process) never collide.
//
// Families:
//
//	chronos_runs_total{status}                 attempts finished, by the run's resulting status:
//	                                           succeeded, pending (a retry is scheduled), dead
//	chronos_attempt_duration_seconds           duration of delivery attempts
//	chronos_schedule_lag_seconds               first-attempt start minus scheduled instant (trigger=schedule)
//	chronos_trigger_to_start_seconds           first-attempt start minus run creation (trigger=manual)
//	chronos_claim_batch_size                   runs per dispatcher claim
//	chronos_occurrences_skipped_total{reason}  occurrences the leader skipped or marked missed (reason: overlap,
//	                                           excluded, misfire, deadline)
//	chronos_occurrences_caught_up_total        catch-up runs the leader created after a gap
//	chronos_dead_alerts_total{outcome}         dead-run alert attempts of this instance: delivered, retrying,
//	                                           failed (given up), expired (dropped unsent)
//	chronos_run_lock_repairs_total{kind}       overlap-lock faults the leader's lock check repaired: orphan,
//	                                           missing, stalled, allowed (see sql.SweepRunLocks); should stay 0
//	chronos_host_events_total{event}           host back-pressure of this instance's deliveries: deferred (a 429/503
//	                                           with Retry-After held a host's runs), breaker_opened, breaker_closed;
//	                                           no origin label (unbounded): GET /v1/hosts says which
//	chronos_host_breakers_open                 cluster-wide origins whose breaker is open or probing (hosts_metrics.go)
//	chronos_hosts_deferred                     cluster-wide origins a Retry-After deferral holds now
//	chronos_bus_dropped_events_total           events lost by slow bus subscribers
//	chronos_bus_published_events_total         events published on the bus
//	chronos_build_info{version,schema_level,goversion} always 1 (health.go)
//	chronos_leader                             1 while this instance leads
//	chronos_listener_connected                 1 while the LISTEN connection is up
//	chronos_listener_reconnects_total          listener (re)connections (resync events)
//	chronos_http_requests_total{method,route,code}
//	chronos_http_request_duration_seconds{route}
//	chronos_runs_in_flight                     runs this instance's workers hold (with a WorkProbe)
//	chronos_worker_slots                       WORKER_CONCURRENCY (with a WorkProbe)
//	chronos_queue_runs{status}                 cluster-wide pending, leased, running (queuemetrics.go)
//	chronos_queue_due_runs                     cluster-wide pending runs that are due
//	chronos_queue_oldest_pending_seconds       wait of the oldest due pending run
//	chronos_queue_stats_age_seconds            how old the chronos_queue_* figures are
//
// plus the Go runtime and process collectors.
type metrics struct {
	reg            *prometheus.Registry
	runs           *prometheus.CounterVec
	attemptSeconds prometheus.Histogram
	scheduleLag    prometheus.Histogram
	triggerStart   prometheus.Histogram
	claimBatch     prometheus.Histogram
	skipped        *prometheus.CounterVec
	caughtUp       prometheus.Counter
	deadAlerts     *prometheus.CounterVec
	lockRepairs    *prometheus.CounterVec
	hostEvents     *prometheus.CounterVec
	reconnects     prometheus.Counter
	requests       *prometheus.CounterVec
	requestSeconds *prometheus.HistogramVec
}

func newMetrics(b *bus.Bus, probe Probe, db *sql.DB, log *slog.Logger) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chronos_runs_total",
			Help: "Delivery attempts finished, by the run's resulting status (succeeded; pending: a retry is scheduled; dead)."},
			[]string{"status"}),
		attemptSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "chronos_attempt_duration_seconds",
			Help: "Duration of delivery attempts.", Buckets: latencyBuckets}),
		scheduleLag: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "chronos_schedule_lag_seconds",
			Help: "Start of a scheduled run's first attempt minus its scheduled instant.", Buckets: latencyBuckets}),
		triggerStart: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "chronos_trigger_to_start_seconds",
			Help: "Start of a manually triggered run's first attempt minus the run's creation.", Buckets: latencyBuckets}),
		claimBatch: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "chronos_claim_batch_size",
			Help: "Runs claimed per dispatcher claim.", Buckets: []float64{1, 2, 5, 10, 25, 50, 100, 250, 500, 1000}}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chronos_occurrences_skipped_total",
			Help: "Scheduled occurrences not run, by reason (overlap: the job's overlap policy held it back; " +
				"excluded: an excluded date; misfire: missed in a gap, by the misfire policy; " +
				"deadline: not started within starting_deadline_seconds, the run is missed)."},
			[]string{"reason"}),
		caughtUp: prometheus.NewCounter(prometheus.CounterOpts{Name: "chronos_occurrences_caught_up_total",
			Help: "Catch-up runs the leader created, each standing for the occurrences a job missed in a gap."}),
		lockRepairs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chronos_run_lock_repairs_total",
			Help: "Overlap-lock faults the leader's lock check found and repaired, by kind (orphan, missing, stalled, allowed); should stay 0."},
			[]string{"kind"}),
		deadAlerts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chronos_dead_alerts_total",
			Help: "Dead-run alerts this instance tried to send, by outcome (delivered; retrying: an attempt failed, " +
				"another follows; failed: the last attempt failed, the alert is given up; expired: dropped unsent, too old)."},
			[]string{"outcome"}),
		hostEvents: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chronos_host_events_total",
			Help: "Host back-pressure events of this instance: deferred (429/503 with Retry-After), breaker_opened, breaker_closed."},
			[]string{"event"}),
		reconnects: prometheus.NewCounter(prometheus.CounterOpts{Name: "chronos_listener_reconnects_total",
			Help: "LISTEN connections (re)established (resync events)."}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "chronos_http_requests_total",
			Help: "API requests by method, route and status code."}, []string{"method", "route", "code"}),
		requestSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "chronos_http_request_duration_seconds",
			Help: "API request durations by route.", Buckets: latencyBuckets}, []string{"route"}),
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.runs, m.attemptSeconds, m.scheduleLag, m.triggerStart, m.claimBatch, m.skipped, m.caughtUp, m.deadAlerts, m.lockRepairs, m.hostEvents, m.reconnects,
		m.requests, m.requestSeconds,
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "chronos_bus_dropped_events_total",
			Help: "Events lost by bus subscribers that fell behind."}, func() float64 { return float64(b.Dropped()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "chronos_bus_published_events_total",
			Help: "Events published on the bus."}, func() float64 { return float64(b.Published()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "chronos_leader",
			Help: "1 while this instance holds the leadership lock."}, func() float64 { return boolFloat(probe.IsLeader()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "chronos_listener_connected",
			Help: "1 while the LISTEN connection is up."}, func() float64 { return boolFloat(probe.ListenerConnected()) }),
	)
	m.reg.MustRegister(workMetrics(probe)...)
	m.reg.MustRegister(newQueueCollector(db, log))
	m.reg.MustRegister(newLimitCollector(db, log))
	m.reg.MustRegister(newHostCollector(db, log))
	// Status labels known up front, so the families show from the start.
	for _, s := range []chronos.RunStatus{chronos.StatusSucceeded, chronos.StatusPending, chronos.StatusDead} {
		m.runs.WithLabelValues(string(s))
	}
	for _, reason := range chronos.SkipReasons {
		m.skipped.WithLabelValues(reason)
	}
	for _, outcome := range chronos.AlertOutcomes {
		m.deadAlerts.WithLabelValues(outcome)
	}
	for _, kind := range chronos.LockRepairKinds {
		m.lockRepairs.WithLabelValues(kind)
	}
	for _, e := range hostEventTypes {
		m.hostEvents.WithLabelValues(hostEventLabel(e))
	}
	return m
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// metricEvents are the bus events the metrics consume.
func metricEvents(e chronos.Event) bool {
	switch e.Type {
	case chronos.EventAttempted, chronos.EventClaimed, chronos.EventResync, chronos.EventSkipped, chronos.EventCaughtUp,
		chronos.EventDeadAlert, chronos.EventLocksRepaired,
		chronos.EventHostDeferred, chronos.EventHostBreakerOpened, chronos.EventHostBreakerClosed:
		return true
	}
	return false
}

// consume feeds the metrics from the bus until ctx ends.
func (m *metrics) consume(ctx context.Context, b *bus.Bus) {
	sub := b.Subscribe(4096, metricEvents)
	defer sub.Close()
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-sub.C():
			if !ok {
				return
			}
			m.observe(e)
		}
	}
}

// observe records one event.
func (m *metrics) observe(e chronos.Event) {
	switch e.Type {
	case chronos.EventAttempted:
		if e.Status != "" {
			m.runs.WithLabelValues(string(e.Status)).Inc()
		}
		if e.DurationMS > 0 {
			m.attemptSeconds.Observe(e.DurationMS / 1000)
		}
		// Only first attempts: a retry starts late by design (backoff).
		if e.StartedAt == nil || e.Attempt > 1 {
			return
		}
		switch {
		case e.Trigger == chronos.TriggerSchedule && e.ScheduledAt != nil:
			m.scheduleLag.Observe(nonNegative(e.StartedAt.Sub(*e.ScheduledAt)))
		case e.Trigger == chronos.TriggerManual && e.CreatedAt != nil:
			m.triggerStart.Observe(nonNegative(e.StartedAt.Sub(*e.CreatedAt)))
		}
	case chronos.EventClaimed:
		m.claimBatch.Observe(float64(e.Count))
	case chronos.EventResync:
		m.reconnects.Inc()
	case chronos.EventSkipped:
		// The reason is one of a few constants, never a job's: the label
		// set stays bounded.
		reason := e.Op
		if !slices.Contains(chronos.SkipReasons, reason) {
			reason = chronos.SkipOverlap
		}
		m.skipped.WithLabelValues(reason).Add(float64(e.Count))
	case chronos.EventCaughtUp:
		m.caughtUp.Inc()
	case chronos.EventDeadAlert:
		if slices.Contains(chronos.AlertOutcomes, e.Op) { // a bounded label set
			m.deadAlerts.WithLabelValues(e.Op).Inc()
		}
	case chronos.EventLocksRepaired:
		if slices.Contains(chronos.LockRepairKinds, e.Op) {
			m.lockRepairs.WithLabelValues(e.Op).Add(float64(e.Count))
		}
	case chronos.EventHostDeferred, chronos.EventHostBreakerOpened, chronos.EventHostBreakerClosed:
		m.hostEvents.WithLabelValues(hostEventLabel(e.Type)).Inc()
	}
}

// nonNegative clamps clock skew between database and process to zero.
func nonNegative(d time.Duration) float64 { return max(d, 0).Seconds() }

// observeRequest records one API request. route is the gin pattern, so
// the label set stays bounded whatever paths clients send.
func (m *metrics) observeRequest(method, route string, status int, d time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	switch method {
	case "GET", "POST", "PATCH", "DELETE", "PUT", "HEAD", "OPTIONS":
	default:
		method = "other" // clients choose methods freely; keep the label bounded
	}
	m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	m.requestSeconds.WithLabelValues(route).Observe(d.Seconds())
}

// metricsHandler is GET /metrics.
func (s *Server) metricsHandler() gin.HandlerFunc { return gin.WrapH(s.MetricsHandler()) }

// MetricsHandler serves the Prometheus metrics, for a listener of their
// own (METRICS_ADDR) when Config.SeparateMetrics keeps them off the API.
func (s *Server) MetricsHandler() nethttp.Handler {
	return promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{Registry: s.metrics.reg})
}
