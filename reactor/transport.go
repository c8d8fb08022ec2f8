package reactor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"syscall"
	"time"

	"github.com/chronoshq/chronos"
)

// ErrTargetRefused is the dial error for an address the target policy
// forbids (see chronos.TargetPolicy).
var ErrTargetRefused = errors.New("target address refused")

// resolver is the part of *net.Resolver the dialer uses; tests stub it.
type resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// guardedDialer resolves a target's host itself, judges every address with
// the target policy, and dials only the addresses it allowed, by address:
// what is checked is what is connected to, so DNS rebinding between a
// check and a connect has nothing to exploit. The net.Dialer's Control
// hook checks again on the socket's actual peer, before connect(2).
type guardedDialer struct {
	policy   chronos.TargetPolicy
	resolver resolver
	// dial connects to one checked "ip:port"; a net.Dialer's DialContext,
	// replaced in tests.
	dial func(ctx context.Context, network, address string) (net.Conn, error)
}

func newGuardedDialer(policy chronos.TargetPolicy) *guardedDialer {
	d := &net.Dialer{
		Timeout:   10 * time.Second,
		KeepAlive: 30 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			return checkDialAddress(address, policy)
		},
	}
	return &guardedDialer{policy: policy, resolver: net.DefaultResolver, dial: d.DialContext}
}

// DialContext implements the transport's dial: resolve, judge, then dial
// the allowed addresses in the resolver's order until one answers.
func (g *guardedDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrTargetRefused, address, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: bad port", ErrTargetRefused, address)
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		ipNet := "ip"
		switch network {
		case "tcp4":
			ipNet = "ip4"
		case "tcp6":
			ipNet = "ip6"
		}
		if addrs, err = g.resolver.LookupNetIP(ctx, ipNet, host); err != nil {
			return nil, err
		}
	}
	var refused, dialErr error
	for _, a := range addrs {
		if err := g.policy.Check(a); err != nil {
			if refused == nil {
				refused = fmt.Errorf("%w: %s: %v", ErrTargetRefused, host, err)
			}
			continue
		}
		conn, err := g.dial(ctx, network, netip.AddrPortFrom(a.WithZone(""), uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		dialErr = err
		if ctx.Err() != nil {
			break
		}
	}
	switch {
	case dialErr != nil:
		return nil, dialErr
	case refused != nil:
		return nil, refused
	}
	return nil, fmt.Errorf("%s: no addresses", host)
}

// newTransport returns the one transport all deliveries share, dialling
// through a guardedDialer. Proxies from the environment are ignored: a
// proxy would dial the target on our behalf and defeat the check.
func newTransport(concurrency int, policy chronos.TargetPolicy) *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           newGuardedDialer(policy).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          4 * concurrency,
		MaxIdleConnsPerHost:   concurrency,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// checkDialAddress applies the target policy to a resolved "ip:port".
func checkDialAddress(address string, policy chronos.TargetPolicy) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrTargetRefused, address, err)
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("%w: %s is not an IP address", ErrTargetRefused, host)
	}
	if err := policy.Check(addr); err != nil {
		return fmt.Errorf("%w: %v", ErrTargetRefused, err)
	}
	return nil
}
