package reactor

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/chronoshq/chronos"
)

// stubResolver answers from a table; it never asks DNS.
type stubResolver map[string][]string

func (r stubResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	list, ok := r[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]netip.Addr, len(list))
	for i, s := range list {
		out[i] = netip.MustParseAddr(s)
	}
	return out, nil
}

// TestGuardedDialer drives real HTTP requests through the delivery
// transport with a stub resolver: names resolving to refused addresses are
// never dialled, and allowed ones reach a target on 127.0.0.1. Every
// connection the test lets through goes to the loopback target; any other
// dial fails the test without touching the network.
func TestGuardedDialer(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	port := u.Port()
	res := stubResolver{
		"hook.test":     {"127.0.0.1"},
		"metadata.test": {"169.254.169.254"},
		"ecs.test":      {"169.254.170.2"},
		"alibaba.test":  {"100.100.100.200"},
		"aws6.test":     {"fd00:ec2::254"},
		"cgnat.test":    {"100.64.0.7"},
		"private.test":  {"10.1.2.3"},
		"mixed.test":    {"10.9.9.9", "127.0.0.1"},
		"nat64.test":    {"64:ff9b::7f00:1"},
	}
	cases := []struct {
		name   string
		policy chronos.TargetPolicy
		host   string
		ok     bool
	}{
		{"strict refuses loopback", chronos.TargetPolicy{}, "hook.test", false},
		{"strict refuses NAT64 of loopback", chronos.TargetPolicy{}, "nat64.test", false},
		{"strict refuses shared space", chronos.TargetPolicy{}, "cgnat.test", false},
		{"strict refuses private", chronos.TargetPolicy{}, "private.test", false},
		{"allow-list opens loopback", chronos.TargetPolicy{AllowedNetworks: pfx("127.0.0.0/8")}, "hook.test", true},
		{"allow-list skips the refused address", chronos.TargetPolicy{AllowedNetworks: pfx("127.0.0.1/32")}, "mixed.test", true},
		{"allow-list of another range", chronos.TargetPolicy{AllowedNetworks: pfx("10.0.0.0/8")}, "hook.test", false},
		{"allow private opens loopback", chronos.TargetPolicy{AllowPrivate: true}, "hook.test", true},
		{"metadata never", chronos.TargetPolicy{AllowPrivate: true}, "metadata.test", false},
		{"ECS credentials never", chronos.TargetPolicy{AllowPrivate: true, AllowedNetworks: pfx("169.254.0.0/16")}, "ecs.test", false},
		{"Alibaba metadata never", chronos.TargetPolicy{AllowPrivate: true, AllowedNetworks: pfx("100.64.0.0/10")}, "alibaba.test", false},
		{"AWS IPv6 metadata never", chronos.TargetPolicy{AllowPrivate: true}, "aws6.test", false},
		{"unknown host", chronos.TargetPolicy{AllowPrivate: true}, "nowhere.test", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var dialled []string
			tr := newTransport(2, tc.policy)
			defer tr.CloseIdleConnections()
			g := newGuardedDialer(tc.policy)
			g.resolver = res
			real := g.dial
			g.dial = func(ctx context.Context, network, address string) (net.Conn, error) {
				mu.Lock()
				dialled = append(dialled, address)
				mu.Unlock()
				ap, err := netip.ParseAddrPort(address)
				if err != nil || !ap.Addr().IsLoopback() {
					t.Errorf("dial of %q: the test may only connect to 127.0.0.0/8", address)
					return nil, errors.New("test: refusing a non-loopback dial")
				}
				return real(ctx, network, address)
			}
			tr.DialContext = g.DialContext
			c := &http.Client{Transport: tr}
			resp, err := c.Get("http://" + net.JoinHostPort(tc.host, port) + "/")
			if resp != nil {
				_ = resp.Body.Close()
			}
			if (err == nil) != tc.ok {
				t.Fatalf("GET %s: err = %v, want ok=%v", tc.host, err, tc.ok)
			}
			if !tc.ok && tc.host != "nowhere.test" && !errors.Is(err, ErrTargetRefused) {
				t.Errorf("error %v is not ErrTargetRefused", err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, d := range dialled {
				if !strings.HasPrefix(d, "127.0.0.1:") {
					t.Errorf("dialled %s", d)
				}
			}
			if !tc.ok && len(dialled) > 0 {
				t.Errorf("a refused target was dialled: %v", dialled)
			}
		})
	}
}

func pfx(s ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(s))
	for i, p := range s {
		out[i] = netip.MustParsePrefix(p)
	}
	return out
}
