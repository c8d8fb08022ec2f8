package chronos

import "testing"

func TestValidateTargetURL(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"http://example.com", "https://example.com:8443/a?b=c", "http://127.0.0.1:9000/hook", "http://[::1]/x"} {
		if err := ValidateTargetURL(u); err != nil {
			t.Errorf("ValidateTargetURL(%q): %v", u, err)
		}
	}
	for _, u := range []string{"", "example.com", "ftp://example.com", "http://", "http://user@example.com",
		"http://169.254.169.254/", "https://[::ffff:a9fe:a9fe]/", "http://169.254.170.2/v2/credentials",
		"http://100.100.100.200/latest/meta-data/", "http://[fd00:ec2::254]/", "http://[64:ff9b::a9fe:a9fe]/", "http://exa mple.com/", "javascript:alert(1)"} {
		if err := ValidateTargetURL(u); err == nil {
			t.Errorf("ValidateTargetURL(%q) accepted", u)
		}
	}
}
