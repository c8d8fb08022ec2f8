package reactor

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/chronoshq/chronos"
)

// ErrTargetRefused is the dial error for an address the target policy
// forbids (see chronos.AllowedIP).
var ErrTargetRefused = fmt.Errorf("target address refused")

// newTransport returns the one transport all deliveries share. The address
// check runs in the dialer's Control hook, on the IP actually being
// connected to after DNS resolution, so a hostname that resolves to a
// private address is refused as surely as a literal one. Proxies from the
// environment are ignored: a proxy would dial the target on our behalf and
// defeat the check.
func newTransport(concurrency int, allowPrivate bool) *http.Transport {
	d := &net.Dialer{
		Timeout:   10 * time.Second,
		KeepAlive: 30 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			return checkDialAddress(address, allowPrivate)
		},
	}
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          4 * concurrency,
		MaxIdleConnsPerHost:   concurrency,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// checkDialAddress applies the target policy to a resolved "ip:port".
func checkDialAddress(address string, allowPrivate bool) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrTargetRefused, address, err)
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("%w: %s is not an IP address", ErrTargetRefused, host)
	}
	// An IPv4-mapped IPv6 address is judged as the IPv4 address it is.
	ip := net.IP(addr.WithZone("").Unmap().AsSlice())
	if !chronos.AllowedIP(ip, allowPrivate) {
		return fmt.Errorf("%w: %s is a private, loopback, link-local or metadata address", ErrTargetRefused, ip)
	}
	return nil
}
