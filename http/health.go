package http

import (
	"context"
	"errors"
	"log/slog"
	nethttp "net/http"
	"runtime"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/chronoshq/chronos/sql"
)

// probeTimeout bounds each database check of /readyz.
const probeTimeout = 2 * time.Second

// healthz is GET /healthz: the process is alive and serving.
func (s *Server) healthz(c *gin.Context) {
	c.Header("Cache-Control", "no-store")
	s.reply(c, nethttp.StatusOK, gin.H{"status": "ok", "instance": s.cfg.Instance})
}

// readiness is the body of GET /readyz.
type readiness struct {
	Status      string       `json:"status"` // "ok" or "unavailable"
	Instance    string       `json:"instance"`
	Version     string       `json:"version"`      // this binary's release version
	SchemaLevel int          `json:"schema_level"` // this binary's newest migration (sql.SchemaLevel)
	Database    string       `json:"database"`     // "ok" or "unreachable"
	Listener    string       `json:"listener"`     // "connected" or "disconnected"
	Leader      leaderStatus `json:"leader"`
	Auth        string       `json:"auth"` // "api_keys" or "disabled"
	// Instances are the cluster's instances connected now, with their
	// versions (omitted when the database is unavailable).
	Instances []sql.Instance `json:"instances,omitempty"`
}

type leaderStatus struct {
	Self     bool   `json:"self"`              // this instance leads
	Instance string `json:"instance"`          // who leads the cluster ("" when nobody does)
	Version  string `json:"version,omitempty"` // the leader's version, when it registered one
	Error    string `json:"error,omitempty"`   // why the leader is unknown
}

// readyz is GET /readyz: 200 when the database answers and the listener is
// connected, 503 otherwise; it also says who leads and the auth mode.
// Leadership does not affect readiness: followers serve the API too.
func (s *Server) readyz(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), probeTimeout)
	defer cancel()
	r := readiness{Status: "ok", Instance: s.cfg.Instance, Version: s.cfg.Version, SchemaLevel: sql.SchemaLevel(),
		Database: "ok", Listener: "connected", Auth: "api_keys"}
	if s.cfg.AuthDisabled {
		r.Auth = "disabled"
	}
	if err := s.db.Ping(ctx); err != nil {
		// The error stays in the log: this endpoint is open, and driver
		// errors name hosts and users.
		s.log.Warn("readiness: database ping failed", slog.String("error", err.Error()))
		r.Status, r.Database = "unavailable", "unreachable"
	}
	if !s.probe.ListenerConnected() {
		r.Status, r.Listener = "unavailable", "disconnected"
	}
	r.Leader.Self = s.probe.IsLeader()
	if r.Database == "ok" {
		// One query names the lock's holder and every instance: the
		// holder is whoever's dedicated leader session holds the lock
		// (never a pooled session: sql.LeaderConn refuses to lead through
		// a pooler), so the name is always an instance that leads.
		ins, err := s.db.Instances(ctx)
		if err != nil {
			// A schema not yet migrated to the versions table (serve with
			// MIGRATE_ON_START=false ahead of `chronos migrate`): the
			// leader alone, without versions.
			name, lerr := s.db.Leader(ctx)
			if lerr != nil {
				s.log.Warn("readiness: leader lookup failed", slog.String("error", errors.Join(err, lerr).Error()))
				r.Leader.Error = "leader lookup failed"
			} else {
				r.Leader.Instance = name
			}
		} else {
			r.Instances = ins
			for _, in := range ins {
				if in.Leader {
					r.Leader.Instance, r.Leader.Version = in.Name, in.Version
				}
			}
		}
	} else {
		r.Leader.Error = "database unavailable"
	}
	status := nethttp.StatusOK
	if r.Status != "ok" {
		status = nethttp.StatusServiceUnavailable
	}
	c.Header("Cache-Control", "no-store")
	s.reply(c, status, r)
}

// buildInfo is chronos_build_info: always 1, labelled with the binary's
// version, schema level and Go version, so dashboards show which versions
// run (one series per instance while a rollout mixes them).
func buildInfo(version string) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "chronos_build_info",
		Help: "Always 1; labels: the binary's version, its schema level (newest migration) and Go version.",
		ConstLabels: prometheus.Labels{"version": version, "schema_level": strconv.Itoa(sql.SchemaLevel()),
			"goversion": runtime.Version()}})
	g.Set(1)
	return g
}
