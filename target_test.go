package chronos

import (
	"net"
	"testing"
)

func TestAllowedIP(t *testing.T) {
	t.Parallel()
	cases := []struct {
		ip                   string
		public, withPrivates bool
	}{
		{"93.184.216.34", true, true},
		{"8.8.8.8", true, true},
		{"2606:4700:4700::1111", true, true},
		{"127.0.0.1", false, true},
		{"127.1.2.3", false, true},
		{"::1", false, true},
		{"10.1.2.3", false, true},
		{"172.16.0.1", false, true},
		{"192.168.1.1", false, true},
		{"fd12:3456::1", false, true},
		{"169.254.1.1", false, true},
		{"fe80::1", false, true},
		{"0.0.0.0", false, true},
		{"::", false, true},
		{"224.0.0.1", false, true},
		{"ff02::1", false, true},
		{"::ffff:127.0.0.1", false, true},
		{"::ffff:10.0.0.1", false, true},
		{"169.254.169.254", false, false},
		{"::ffff:169.254.169.254", false, false},
	}
	for _, tc := range cases {
		ip := net.ParseIP(tc.ip)
		if ip == nil {
			t.Fatalf("bad test ip %q", tc.ip)
		}
		if got := AllowedIP(ip, false); got != tc.public {
			t.Errorf("AllowedIP(%s, false) = %v, want %v", tc.ip, got, tc.public)
		}
		if got := AllowedIP(ip, true); got != tc.withPrivates {
			t.Errorf("AllowedIP(%s, true) = %v, want %v", tc.ip, got, tc.withPrivates)
		}
	}
}

func TestValidateTargetURL(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"http://example.com", "https://example.com:8443/a?b=c", "http://127.0.0.1:9000/hook", "http://[::1]/x"} {
		if err := ValidateTargetURL(u); err != nil {
			t.Errorf("ValidateTargetURL(%q): %v", u, err)
		}
	}
	for _, u := range []string{"", "example.com", "ftp://example.com", "http://", "http://user@example.com",
		"http://169.254.169.254/", "https://[::ffff:a9fe:a9fe]/", "http://exa mple.com/", "javascript:alert(1)"} {
		if err := ValidateTargetURL(u); err == nil {
			t.Errorf("ValidateTargetURL(%q) accepted", u)
		}
	}
}
