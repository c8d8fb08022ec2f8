package chronos

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"unicode"
)

// BackoffStrategy is how the delay between retries grows.
type BackoffStrategy string

// Backoff strategies.
const (
	BackoffExponential BackoffStrategy = "exponential" // base·2^(n-1), capped, with jitter
	BackoffLinear      BackoffStrategy = "linear"      // base·n, capped
)

// Valid reports whether s is a known strategy.
func (s BackoffStrategy) Valid() bool { return s == BackoffExponential || s == BackoffLinear }

// OverlapPolicy says what happens when an occurrence comes due while an
// earlier run of the same job is still active.
type OverlapPolicy string

// Overlap policies.
const (
	OverlapAllow    OverlapPolicy = "allow"     // materialize regardless
	OverlapSkip     OverlapPolicy = "skip"      // skip (and count) while a run is active
	OverlapQueueOne OverlapPolicy = "queue_one" // at most one waiting run behind the active one
)

// Valid reports whether p is a known policy.
func (p OverlapPolicy) Valid() bool {
	return p == OverlapAllow || p == OverlapSkip || p == OverlapQueueOne
}

// TargetPolicy decides which addresses a delivery may connect to. The zero
// value is the strict policy: every address of the IANA special-purpose
// registries (IPv4 and IPv6) is refused, and only ordinary global unicast
// is allowed.
//
// Addresses that embed an IPv4 address (IPv4-mapped ::ffff:a.b.c.d,
// IPv4-compatible ::a.b.c.d, IPv4-translated ::ffff:0:a.b.c.d, NAT64
// 64:ff9b::/96 and 6to4 2002::/16) are judged by the IPv4 address inside:
// a router or translator on the way would deliver them there.
//
// Cloud metadata and credential endpoints (all of 169.254.0.0/16,
// fd00:ec2::/64, 100.100.100.200) are refused always, whatever the policy.
type TargetPolicy struct {
	// AllowPrivate allows every special-purpose range but the metadata
	// endpoints (ALLOW_PRIVATE_TARGETS).
	AllowPrivate bool
	// AllowedNetworks are ranges allowed although special-purpose, so an
	// operator can open one internal network without opening them all
	// (ALLOWED_TARGET_NETWORKS). They never open a metadata endpoint.
	AllowedNetworks []netip.Prefix
}

// AddressError says why a policy refuses an address.
type AddressError struct {
	Addr     netip.Addr   // the address judged (zone stripped)
	Embedded netip.Addr   // the IPv4 address inside Addr, when it embeds one
	Range    netip.Prefix // the special-purpose range that holds it
	Class    string       // what the range is: "private", "loopback", ...
	Always   bool         // a metadata endpoint: no setting allows it
}

// Error implements the error interface.
func (e *AddressError) Error() string {
	what := e.Addr.String()
	if e.Embedded.IsValid() {
		what += " (embedding " + e.Embedded.String() + ")"
	}
	if e.Always {
		return fmt.Sprintf("address %s is a cloud metadata or credential endpoint (%s) and is never allowed", what, e.Range)
	}
	return fmt.Sprintf("address %s is %s (%s); allow it with ALLOWED_TARGET_NETWORKS or ALLOW_PRIVATE_TARGETS=true", what, e.Class, e.Range)
}

// specialRange is one entry of the special-purpose registries.
type specialRange struct {
	prefix netip.Prefix
	class  string
}

func ranges(class string, cidrs ...string) []specialRange {
	out := make([]specialRange, len(cidrs))
	for i, c := range cidrs {
		out[i] = specialRange{netip.MustParsePrefix(c), class}
	}
	return out
}

// metadataRanges are refused always: cloud metadata services hand out
// credentials to anything that can reach them. All of 169.254.0.0/16, not
// just .169.254: ECS serves credentials on 169.254.170.2, and other clouds
// use other link-local addresses.
var metadataRanges = concat(
	ranges("a cloud metadata endpoint (link-local)", "169.254.0.0/16"),
	ranges("a cloud metadata endpoint (AWS IPv6)", "fd00:ec2::/64"),
	ranges("a cloud metadata endpoint (Alibaba Cloud)", "100.100.100.200/32"),
)

// specialRanges are the IANA IPv4 and IPv6 special-purpose address
// registries (plus multicast, and IPv6 outside 2000::/3, which IANA has not
// allocated for unicast), most specific first where ranges nest. Ranges
// whose registry entry is "globally reachable" (such as AS112) are left
// out; a few small globally reachable blocks inside refused ranges
// (192.0.0.9/32, 2001:1::1/128, ...) are refused with their parents: they
// are anycast service addresses, never a webhook target.
var specialRanges = concat(
	ranges("unspecified", "0.0.0.0/32", "::/128"),
	ranges("broadcast", "255.255.255.255/32"),
	ranges("loopback", "127.0.0.0/8", "::1/128"),
	ranges("'this network'", "0.0.0.0/8"),
	ranges("private", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"),
	ranges("shared address space (carrier-grade NAT)", "100.64.0.0/10"),
	ranges("link-local", "169.254.0.0/16", "fe80::/10"),
	ranges("benchmarking", "198.18.0.0/15", "2001:2::/48"),
	ranges("IETF protocol assignments", "192.0.0.0/24", "2001::/23"),
	ranges("documentation", "192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "233.252.0.0/24",
		"2001:db8::/32", "3fff::/20"),
	ranges("deprecated 6to4 relay anycast", "192.88.99.0/24"),
	ranges("multicast", "224.0.0.0/4", "ff00::/8"),
	ranges("reserved", "240.0.0.0/4"),
	ranges("unique local (private)", "fc00::/7"),
	ranges("site-local (deprecated)", "fec0::/10"),
	ranges("local-use IPv4/IPv6 translation", "64:ff9b:1::/48"),
	ranges("discard-only", "100::/64"),
	ranges("dummy IPv6 prefix", "100:0:0:1::/64"),
	ranges("SRv6 SIDs", "5f00::/16"),
)

// globalUnicast6 is the only IPv6 space IANA allocates for global unicast.
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// Prefixes of IPv6 forms that embed an IPv4 address.
var (
	compatible4 = netip.MustParsePrefix("::/96")
	translated4 = netip.MustParsePrefix("::ffff:0:0.0.0.0/96")
	nat64       = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
)

func concat(lists ...[]specialRange) []specialRange {
	var out []specialRange
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// EmbeddedIPv4 returns the IPv4 address an IPv6 address stands for: the one
// inside an IPv4-mapped, IPv4-compatible, IPv4-translated, NAT64
// (64:ff9b::/96) or 6to4 (2002::/16) address. The IPv6 unspecified and
// loopback addresses are themselves, not IPv4-compatible forms.
func EmbeddedIPv4(a netip.Addr) (netip.Addr, bool) {
	if !a.Is6() {
		return netip.Addr{}, false
	}
	a = a.WithZone("")
	b := a.As16()
	switch {
	case a.Is4In6():
		return a.Unmap(), true
	case a == netip.IPv6Unspecified() || a == netip.IPv6Loopback():
		return netip.Addr{}, false
	case compatible4.Contains(a), translated4.Contains(a), nat64.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

// judged returns the address a policy judges for a: a without its zone, or
// the IPv4 address it embeds.
func judged(a netip.Addr) (addr, embedded netip.Addr) {
	addr = a.WithZone("")
	if v4, ok := EmbeddedIPv4(addr); ok {
		return addr, v4
	}
	return addr.Unmap(), netip.Addr{}
}

// Metadata returns the error for an address that is a cloud metadata or
// credential endpoint (itself or the IPv4 address it embeds), or nil.
func Metadata(a netip.Addr) *AddressError {
	addr, v4 := judged(a)
	for _, r := range metadataRanges {
		if r.prefix.Contains(addr) || (v4.IsValid() && r.prefix.Contains(v4)) {
			return &AddressError{Addr: addr, Embedded: v4, Range: r.prefix, Class: r.class, Always: true}
		}
	}
	return nil
}

// Check returns nil when a delivery may connect to a, or an *AddressError
// saying which range refuses it.
func (p TargetPolicy) Check(a netip.Addr) error {
	if !a.IsValid() {
		return &AddressError{Addr: a, Class: "not an IP address"}
	}
	if err := Metadata(a); err != nil {
		return err
	}
	if p.AllowPrivate {
		return nil
	}
	addr, v4 := judged(a)
	for _, n := range p.AllowedNetworks {
		if n.Contains(addr) || (v4.IsValid() && n.Contains(v4)) {
			return nil
		}
	}
	j := addr
	if v4.IsValid() {
		j = v4
	}
	for _, r := range specialRanges {
		if r.prefix.Contains(j) {
			return &AddressError{Addr: addr, Embedded: v4, Range: r.prefix, Class: r.class}
		}
	}
	if j.Is6() && !globalUnicast6.Contains(j) {
		return &AddressError{Addr: addr, Range: globalUnicast6, Class: "reserved (outside the global unicast space)"}
	}
	return nil
}

// Allows reports whether a delivery may connect to a.
func (p TargetPolicy) Allows(a netip.Addr) bool { return p.Check(a) == nil }

// CheckURL applies the policy to the host of a target URL when that host is
// a literal IP address. A hostname passes: it is judged when dialled, after
// DNS, where no rebinding can get around the check.
func (p TargetPolicy) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return nil // ValidateTargetURL reports malformed URLs
	}
	a, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		return nil
	}
	return p.Check(a)
}

// ParseNetworks parses a list of CIDRs separated by commas or spaces
// (ALLOWED_TARGET_NETWORKS). A bare address is a single-address network;
// host bits are masked off. A network that overlaps a metadata endpoint is
// accepted, but the endpoint stays refused.
func ParseNetworks(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
		if !strings.Contains(f, "/") {
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, fmt.Errorf("%q is not a CIDR such as 10.1.0.0/16", f)
			}
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR such as 10.1.0.0/16", f)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// IsMetadataIP reports whether ip is a cloud metadata or credential
// endpoint, which no target may ever reach, whatever the policy.
func IsMetadataIP(ip net.IP) bool {
	a, ok := netip.AddrFromSlice(ip)
	return ok && Metadata(a) != nil
}
