package chronos

import (
	"errors"
	"net/netip"
	"testing"
)

// policyCases is the table of addresses: what the strict policy, the
// policy with ALLOW_PRIVATE_TARGETS, and a policy allowing only
// 10.1.0.0/16 and fd12:3456::/32 (ALLOWED_TARGET_NETWORKS) decide.
var policyCases = []struct {
	addr                    string
	strict, private, listed bool
	class                   string // of the strict refusal, "" when allowed
}{
	// Ordinary global unicast.
	{"93.184.216.34", true, true, true, ""},
	{"8.8.8.8", true, true, true, ""},
	{"1.1.1.1", true, true, true, ""},
	{"2606:4700:4700::1111", true, true, true, ""},
	{"2a00:1450:4001:80b::200e", true, true, true, ""},
	{"::ffff:8.8.8.8", true, true, true, ""},
	{"64:ff9b::808:808", true, true, true, ""}, // NAT64 of 8.8.8.8
	{"2002:808:808::1", true, true, true, ""},  // 6to4 of 8.8.8.8
	{"192.31.196.1", true, true, true, ""},     // AS112, globally reachable
	{"2620:4f:8000::1", true, true, true, ""},  // AS112, globally reachable
	{"100.63.255.255", true, true, true, ""},   // just below shared space
	{"100.128.0.0", true, true, true, ""},      // just above shared space
	{"198.17.255.255", true, true, true, ""},   // just below benchmarking
	{"198.20.0.0", true, true, true, ""},       // just above benchmarking
	{"172.15.255.255", true, true, true, ""},
	{"172.32.0.0", true, true, true, ""},
	{"223.255.255.255", true, true, true, ""},

	// Loopback, unspecified, this network, broadcast.
	{"127.0.0.1", false, true, false, "loopback"},
	{"127.1.2.3", false, true, false, "loopback"},
	{"::1", false, true, false, "loopback"},
	{"0.0.0.0", false, true, false, "unspecified"},
	{"::", false, true, false, "unspecified"},
	{"0.1.2.3", false, true, false, "'this network'"},
	{"255.255.255.255", false, true, false, "broadcast"},

	// Private, shared, unique local.
	{"10.0.0.1", false, true, false, "private"},
	{"10.1.2.3", false, true, true, "private"},
	{"172.16.0.1", false, true, false, "private"},
	{"172.31.255.255", false, true, false, "private"},
	{"192.168.1.1", false, true, false, "private"},
	{"100.64.0.1", false, true, false, "shared address space (carrier-grade NAT)"},
	{"100.127.255.254", false, true, false, "shared address space (carrier-grade NAT)"},
	{"fd12:3456::1", false, true, true, "unique local (private)"},
	{"fc00::1", false, true, false, "unique local (private)"},
	{"fd00:ec3::1", false, true, false, "unique local (private)"},

	// Link-local, multicast, protocol assignments, documentation,
	// benchmarking, reserved.
	{"fe80::1", false, true, false, "link-local"},
	{"fe80::1%eth0", false, true, false, "link-local"},
	{"224.0.0.1", false, true, false, "multicast"},
	{"239.255.255.250", false, true, false, "multicast"},
	{"ff02::1", false, true, false, "multicast"},
	{"ff05::1:3", false, true, false, "multicast"},
	{"192.0.0.8", false, true, false, "IETF protocol assignments"},
	{"2001::1", false, true, false, "IETF protocol assignments"}, // Teredo
	{"2001:10::1", false, true, false, "IETF protocol assignments"},
	{"192.0.2.1", false, true, false, "documentation"},
	{"198.51.100.7", false, true, false, "documentation"},
	{"203.0.113.9", false, true, false, "documentation"},
	{"2001:db8::1", false, true, false, "documentation"},
	{"3fff::1", false, true, false, "documentation"},
	{"198.18.0.1", false, true, false, "benchmarking"},
	{"198.19.255.255", false, true, false, "benchmarking"},
	{"2001:2::1", false, true, false, "benchmarking"},
	{"192.88.99.1", false, true, false, "deprecated 6to4 relay anycast"},
	{"240.0.0.1", false, true, false, "reserved"},
	{"fec0::1", false, true, false, "site-local (deprecated)"},
	{"100::1", false, true, false, "discard-only"},
	{"64:ff9b:1::1", false, true, false, "local-use IPv4/IPv6 translation"},
	{"5f00::1", false, true, false, "SRv6 SIDs"},
	{"4000::1", false, true, false, "reserved (outside the global unicast space)"},
	{"::2:0:0:1", false, true, false, "reserved (outside the global unicast space)"},

	// IPv6 forms judged by the IPv4 address inside.
	{"::ffff:127.0.0.1", false, true, false, "loopback"},
	{"::ffff:10.0.0.1", false, true, false, "private"},
	{"::ffff:10.1.0.1", false, true, true, "private"},
	{"::10.0.0.1", false, true, false, "private"},           // IPv4-compatible
	{"::127.0.0.1", false, true, false, "loopback"},         // IPv4-compatible
	{"::ffff:0:192.168.0.1", false, true, false, "private"}, // IPv4-translated
	{"64:ff9b::7f00:1", false, true, false, "loopback"},     // NAT64 of 127.0.0.1
	{"64:ff9b::a01:203", false, true, true, "private"},      // NAT64 of 10.1.2.3
	{"64:ff9b::6440:1", false, true, false, "shared address space (carrier-grade NAT)"},
	{"2002:a00:1::", false, true, false, "private"},       // 6to4 of 10.0.0.1
	{"2002:7f00:1::1", false, true, false, "loopback"},    // 6to4 of 127.0.0.1
	{"2002:c612:1::", false, true, false, "benchmarking"}, // 6to4 of 198.18.0.1

	// Metadata and credential endpoints: never, whatever the policy.
	{"169.254.169.254", false, false, false, "a cloud metadata endpoint (link-local)"},
	{"169.254.170.2", false, false, false, "a cloud metadata endpoint (link-local)"},
	{"169.254.1.1", false, false, false, "a cloud metadata endpoint (link-local)"},
	{"100.100.100.200", false, false, false, "a cloud metadata endpoint (Alibaba Cloud)"},
	{"fd00:ec2::254", false, false, false, "a cloud metadata endpoint (AWS IPv6)"},
	{"fd00:ec2::23", false, false, false, "a cloud metadata endpoint (AWS IPv6)"},
	{"::ffff:169.254.169.254", false, false, false, "a cloud metadata endpoint (link-local)"},
	{"::169.254.169.254", false, false, false, "a cloud metadata endpoint (link-local)"},
	{"::ffff:0:169.254.169.254", false, false, false, "a cloud metadata endpoint (link-local)"},
	{"64:ff9b::a9fe:a9fe", false, false, false, "a cloud metadata endpoint (link-local)"},
	{"64:ff9b::6464:64c8", false, false, false, "a cloud metadata endpoint (Alibaba Cloud)"},
	{"2002:a9fe:a9fe::1", false, false, false, "a cloud metadata endpoint (link-local)"},
	{"::ffff:100.100.100.200", false, false, false, "a cloud metadata endpoint (Alibaba Cloud)"},
}

func TestTargetPolicyTable(t *testing.T) {
	t.Parallel()
	listed, err := ParseNetworks("10.1.0.0/16, fd12:3456::/32 169.254.0.0/16,100.100.100.200 fd00:ec2::/32")
	if err != nil {
		t.Fatal(err)
	}
	strict, private, only := TargetPolicy{}, TargetPolicy{AllowPrivate: true}, TargetPolicy{AllowedNetworks: listed}
	for _, tc := range policyCases {
		a, err := netip.ParseAddr(tc.addr)
		if err != nil {
			t.Fatalf("bad test address %q", tc.addr)
		}
		err = strict.Check(a)
		if (err == nil) != tc.strict {
			t.Errorf("strict.Check(%s) = %v, want allowed=%v", tc.addr, err, tc.strict)
		}
		var ae *AddressError
		if err != nil && (!errors.As(err, &ae) || ae.Class != tc.class) {
			t.Errorf("strict.Check(%s): class %q, want %q (%v)", tc.addr, ae.Class, tc.class, err)
		}
		if got := private.Allows(a); got != tc.private {
			t.Errorf("private.Allows(%s) = %v, want %v", tc.addr, got, tc.private)
		}
		if got := only.Allows(a); got != tc.listed {
			t.Errorf("listed.Allows(%s) = %v, want %v", tc.addr, got, tc.listed)
		}
		isMeta := Metadata(a) != nil
		if isMeta != (!tc.private) {
			t.Errorf("Metadata(%s) = %v", tc.addr, isMeta)
		}
	}
}

func TestTargetPolicyCheckURL(t *testing.T) {
	t.Parallel()
	strict := TargetPolicy{}
	for _, u := range []string{"https://example.com/hook", "http://localhost:9000/", "http://8.8.8.8/", "http://[2606:4700:4700::1111]:8443/x"} {
		if err := strict.CheckURL(u); err != nil {
			t.Errorf("CheckURL(%q) = %v", u, err)
		}
	}
	for _, u := range []string{"http://127.0.0.1:9000/", "http://[::1]/", "http://10.0.0.1/", "http://100.100.100.200/", "http://[fd00:ec2::254]/", "http://[fe80::1%25eth0]/"} {
		if err := strict.CheckURL(u); err == nil {
			t.Errorf("CheckURL(%q) accepted", u)
		}
	}
	if err := (TargetPolicy{AllowPrivate: true}).CheckURL("http://169.254.170.2/v2/credentials"); err == nil {
		t.Error("the ECS credentials endpoint is allowed with AllowPrivate")
	}
}

func TestParseNetworks(t *testing.T) {
	t.Parallel()
	got, err := ParseNetworks(" 10.1.2.3/16,\t192.168.5.5 ,fd00::/8  ")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.1.0.0/16", "192.168.5.5/32", "fd00::/8"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("network %d = %s, want %s", i, got[i], want[i])
		}
	}
	if got, err := ParseNetworks(""); err != nil || len(got) != 0 {
		t.Errorf("empty: %v, %v", got, err)
	}
	for _, bad := range []string{"10.0.0.0/33", "example.com", "10.0.0.0/8,nope", "::/129"} {
		if _, err := ParseNetworks(bad); err == nil {
			t.Errorf("ParseNetworks(%q) accepted", bad)
		}
	}
}

// FuzzTargetPolicy: for any 16 bytes (as IPv6, and their last 4 as IPv4)
// and any allowed network, the policy never panics and keeps its
// invariants: a metadata endpoint is refused by every policy; the strict
// policy allows nothing that AllowPrivate or an allow-list refuses;
// AllowPrivate allows every address but metadata; an IPv4 address and its
// IPv4-mapped, NAT64 and 6to4 forms are judged alike.
func FuzzTargetPolicy(f *testing.F) {
	for _, tc := range policyCases {
		a := netip.MustParseAddr(tc.addr).WithZone("")
		b := a.As16()
		f.Add(b[:], uint8(a.BitLen()/2))
	}
	f.Fuzz(func(t *testing.T, raw []byte, bits uint8) {
		var b [16]byte
		copy(b[:], raw)
		a6 := netip.AddrFrom16(b)
		a4 := netip.AddrFrom4([4]byte(b[12:16]))
		allowed := netip.PrefixFrom(a6, int(bits)%129).Masked()
		pols := []TargetPolicy{{}, {AllowPrivate: true}, {AllowedNetworks: []netip.Prefix{allowed}}}
		for _, a := range []netip.Addr{a6, a4} {
			strict := pols[0].Check(a)
			for i, p := range pols {
				err := p.Check(a)
				if err != nil {
					var ae *AddressError
					if !errors.As(err, &ae) || ae.Error() == "" {
						t.Fatalf("policy %d: %s: error %v is not an AddressError", i, a, err)
					}
				}
				if Metadata(a) != nil && err == nil {
					t.Fatalf("policy %d allows metadata endpoint %s", i, a)
				}
				if strict == nil && err != nil {
					t.Fatalf("policy %d refuses %s, which the strict policy allows: %v", i, a, err)
				}
			}
			if (pols[1].Check(a) == nil) != (Metadata(a) == nil) {
				t.Fatalf("AllowPrivate on %s disagrees with Metadata", a)
			}
		}
		// The IPv4 address and its IPv6 forms are judged alike.
		v4 := a4.As4()
		forms := []netip.Addr{
			netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff, 12: v4[0], 13: v4[1], 14: v4[2], 15: v4[3]}),
			netip.AddrFrom16([16]byte{0: 0x00, 1: 0x64, 2: 0xff, 3: 0x9b, 12: v4[0], 13: v4[1], 14: v4[2], 15: v4[3]}),
			netip.AddrFrom16([16]byte{0: 0x20, 1: 0x02, 2: v4[0], 3: v4[1], 4: v4[2], 5: v4[3], 15: 1}),
		}
		want := pols[0].Check(a4) == nil
		for _, f := range forms {
			if got := pols[0].Check(f) == nil; got != want {
				t.Fatalf("%s judged %v, but its IPv4 address %s %v", f, got, a4, want)
			}
		}
	})
}
