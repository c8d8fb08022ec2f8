package http

import (
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/chronoshq/chronos"
)

// TestTargetPolicyAtCreateAndPatch: a literal target address the policy in
// force refuses is a 400 naming target_url at create and PATCH; hostnames
// pass (judged at dial time); metadata endpoints are refused whatever the
// policy.
func TestTargetPolicyAtCreateAndPatch(t *testing.T) {
	t.Parallel()
	db := newEnv(t).db
	strict := newEnvDB(t, db, func(c *Config) { c.TargetPolicy = chronos.TargetPolicy{} })
	listed := newEnvDB(t, db, func(c *Config) {
		c.TargetPolicy = chronos.TargetPolicy{AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("10.20.0.0/16")}}
	})
	open := newEnvDB(t, db, func(c *Config) { c.TargetPolicy = chronos.TargetPolicy{AllowPrivate: true} })

	n := 0 // job names are unique
	body := func(u string) map[string]any {
		n++
		b := cronJob("t-" + itoa64(int64(n)))
		b["target_url"] = u
		return b
	}
	for _, u := range []string{"http://127.0.0.1:9/", "http://10.0.0.1/", "http://100.64.0.1/", "http://198.18.0.1/", "http://[64:ff9b::a00:1]/", "http://[::ffff:192.168.0.1]/"} {
		wantFields(t, strict.do("POST", "/v1/jobs", body(u)), "target_url")
	}
	for _, u := range []string{"http://169.254.169.254/", "http://169.254.170.2/", "http://100.100.100.200/", "http://[fd00:ec2::254]/"} {
		wantFields(t, open.do("POST", "/v1/jobs", body(u)), "target_url")
		wantFields(t, listed.do("POST", "/v1/jobs", body(u)), "target_url")
	}
	wantStatus(t, strict.do("POST", "/v1/jobs", body("http://hooks.example.com/x")), 201)
	wantStatus(t, listed.do("POST", "/v1/jobs", body("http://10.20.3.4/x")), 201)
	wantFields(t, listed.do("POST", "/v1/jobs", body("http://10.21.3.4/x")), "target_url")

	j := strict.createJob(body("https://hooks.example.com/x"))
	path := "/v1/jobs/" + itoa64(j.ID)
	wantFields(t, strict.do("PATCH", path, map[string]any{"target_url": "http://192.168.1.1/"}), "target_url")
	wantFields(t, open.do("PATCH", path, map[string]any{"target_url": "http://[::ffff:169.254.169.254]/"}), "target_url")
	wantStatus(t, open.do("PATCH", path, map[string]any{"target_url": "http://192.168.1.1/"}), 200)
}

// TestMetadataRefusalReadsAlike: a cloud metadata address is refused with
// the same words whatever the field (target_url, on_dead_url) and whether
// it comes at create or at PATCH (which different checks see first).
func TestMetadataRefusalReadsAlike(t *testing.T) {
	t.Parallel()
	e := newEnvDB(t, newEnv(t).db, func(c *Config) { c.TargetPolicy = chronos.TargetPolicy{AllowPrivate: true} })
	const bad = "http://169.254.169.254/latest/meta-data"
	want := "address 169.254.169.254 is a cloud metadata or credential endpoint (169.254.0.0/16) and is never allowed"
	j := e.createJob(cronJob("meta"))
	path := "/v1/jobs/" + itoa64(j.ID)
	for i, field := range []string{"target_url", "on_dead_url"} {
		b := cronJob("meta-" + itoa64(int64(i)))
		b[field] = bad
		for what, w := range map[string]*httptest.ResponseRecorder{
			"create": e.do("POST", "/v1/jobs", b),
			"PATCH":  e.do("PATCH", path, map[string]any{field: bad}),
		} {
			wantFields(t, w, field)
			if got := errorOf(t, w).Fields[field]; got != want {
				t.Errorf("%s %s: %q, want %q", what, field, got, want)
			}
		}
	}
}
