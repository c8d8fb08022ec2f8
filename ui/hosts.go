package ui

import (
	nethttp "net/http"
	"time"

	"github.com/chronoshq/chronos"
)

// hostRow is one line of the hosts page.
type hostRow struct {
	chronos.Host
	Until *time.Time // the deferral's end, or the breaker's cooldown's
	Last  string     // the latest deferral's or failure's answer
}

// hostsPage is GET /ui/hosts: the origins that deferred runs or failed,
// with their back-pressure and circuit breaker (as GET /v1/hosts).
func (c *Console) hostsPage(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	hs, err := c.db.Hosts(r.Context())
	if err != nil {
		c.failErr(w, r, s, err)
		return
	}
	rows := make([]hostRow, len(hs))
	for i, h := range hs {
		rows[i] = hostRow{Host: h}
		switch h.State {
		case chronos.HostDeferred:
			rows[i].Until = h.DeferredUntil
		case chronos.HostOpen, chronos.HostProbing:
			rows[i].Until = h.OpenUntil
		}
		if h.LastStatusCode != nil || h.LastError != "" {
			rows[i].Last = outcome(h.LastStatusCode, &h.LastError)
		}
	}
	c.render(w, r, s, nethttp.StatusOK, "hosts", "Hosts", map[string]any{"Hosts": rows})
}
