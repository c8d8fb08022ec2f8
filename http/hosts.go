package http

import (
	nethttp "net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/chronoshq/chronos"
)

// hostList is the body of GET /v1/hosts.
type hostList struct {
	Hosts []chronos.Host `json:"hosts"`
}

// newHostList is the body of GET /v1/hosts: every origin that ever
// deferred runs or failed, with its back-pressure and breaker state (issue
// 24).
func newHostList(hs []chronos.Host) hostList {
	out := hostList{Hosts: make([]chronos.Host, 0, len(hs))}
	for _, h := range hs {
		out.Hosts = append(out.Hosts, hostUTC(h))
	}
	return out
}

// getHost is GET /v1/hosts/{origin}. The origin is the rest of the path,
// percent-encoded or not (http%3A%2F%2Fapi.example.com%3A443 and
// http://api.example.com:443 alike); any URL on the host names it (a path,
// no port: it is normalised as chronos.Origin does).
func (s *Server) getHost(c *gin.Context) {
	if _, err := parseQuery(c); err != nil {
		s.fail(c, err)
		return
	}
	raw := strings.TrimPrefix(c.Param("origin"), "/")
	origin := chronos.Origin(raw)
	if origin == "" {
		s.fail(c, invalid("origin", "must be scheme://host[:port], e.g. https://api.example.com:443"))
		return
	}
	h, err := s.db.Host(c.Request.Context(), origin)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.reply(c, nethttp.StatusOK, hostUTC(h))
}

// hostUTC puts every time of a host in UTC for the wire.
func hostUTC(h chronos.Host) chronos.Host {
	h.DeferredUntil = utcPtr(h.DeferredUntil)
	h.OpenedAt = utcPtr(h.OpenedAt)
	h.OpenUntil = utcPtr(h.OpenUntil)
	h.UpdatedAt = h.UpdatedAt.UTC()
	return h
}

// hostEventTypes are the host.* events chronos_host_events_total counts.
var hostEventTypes = []chronos.EventType{chronos.EventHostDeferred, chronos.EventHostBreakerOpened, chronos.EventHostBreakerClosed}

// hostEventLabel is a host event's label value: its type without "host.".
func hostEventLabel(t chronos.EventType) string { return strings.TrimPrefix(string(t), "host.") }
