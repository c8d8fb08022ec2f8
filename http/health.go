package http

import (
	"context"
	"log/slog"
	nethttp "net/http"
	"time"

	"github.com/gin-gonic/gin"
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
	Status   string       `json:"status"` // "ok" or "unavailable"
	Instance string       `json:"instance"`
	Database string       `json:"database"` // "ok" or "unreachable"
	Listener string       `json:"listener"` // "connected" or "disconnected"
	Leader   leaderStatus `json:"leader"`
	Auth     string       `json:"auth"` // "api_keys" or "disabled"
}

type leaderStatus struct {
	Self     bool   `json:"self"`            // this instance leads
	Instance string `json:"instance"`        // who leads the cluster ("" when nobody does)
	Error    string `json:"error,omitempty"` // why the leader is unknown
}

// readyz is GET /readyz: 200 when the database answers and the listener is
// connected, 503 otherwise; it also says who leads and the auth mode.
// Leadership does not affect readiness: followers serve the API too.
func (s *Server) readyz(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), probeTimeout)
	defer cancel()
	r := readiness{Status: "ok", Instance: s.cfg.Instance, Database: "ok", Listener: "connected", Auth: "api_keys"}
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
		name, err := s.db.Leader(ctx)
		if err != nil {
			s.log.Warn("readiness: leader lookup failed", slog.String("error", err.Error()))
			r.Leader.Error = "leader lookup failed"
		} else {
			r.Leader.Instance = name
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
