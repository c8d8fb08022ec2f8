package chronos

import (
	"net"
	"net/url"
	"strings"
)

// Origin is the host a target URL delivers to, as host back-pressure and
// the circuit breaker (issue 24) key it: "scheme://host:port", scheme and
// host lower-cased, the port always written (80 for http, 443 for https
// when the URL has none), an IPv6 host in brackets. Path, query and
// credentials are not part of it: every URL on one server shares its
// origin's deferrals and breaker.
//
// The database computes the same text with chronos_origin(url) (migration
// 023) to find the runs of an origin; the two are tested to agree. It is
// "" for a URL without a host.
func Origin(target string) string {
	u, err := url.Parse(target)
	if err != nil || u.Host == "" {
		return ""
	}
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return ""
	}
	port := u.Port()
	if port == "" {
		port = defaultPort(scheme)
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// defaultPort is the port a scheme implies.
func defaultPort(scheme string) string {
	if scheme == "https" {
		return "443"
	}
	return "80"
}
