package chronos

import (
	"encoding/base64"
	"testing"
	"time"
)

func TestIsSecretHeader(t *testing.T) {
	t.Parallel()
	j := &Job{SecretHeaders: []string{"X-Api-Key"}}
	for name, want := range map[string]bool{"authorization": true, "Proxy-Authorization": true, "COOKIE": true,
		"x-api-key": true, "X-Env": false, "Set-Cookie": false} {
		if got := j.IsSecretHeader(name); got != want {
			t.Errorf("IsSecretHeader(%q) = %v", name, got)
		}
	}
}

func TestRotate(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	hour := time.Hour
	// First secret, no grace: just the new one.
	s, err := Rotate(nil, "a", now, 0)
	if err != nil || len(s) != 1 || s[0].Secret != "a" || s[0].ExpiresAt != nil {
		t.Fatalf("first: %+v %v", s, err)
	}
	// First secret with grace: the cluster default signs through it.
	s, _ = Rotate(nil, "a", now, hour)
	if len(s) != 2 || !s[0].ClusterDefault || !s[0].ExpiresAt.Equal(now.Add(hour)) || s[1].Secret != "a" {
		t.Fatalf("first with grace: %+v", s)
	}
	// Rotation with grace: the old one expires at now+grace.
	s, _ = Rotate([]SigningSecret{{Secret: "a", CreatedAt: now.Add(-hour)}}, "b", now, hour)
	if len(s) != 2 || s[0].Secret != "a" || !s[0].ExpiresAt.Equal(now.Add(hour)) || s[1].Secret != "b" || s[1].ExpiresAt != nil {
		t.Fatalf("rotate: %+v", s)
	}
	// An expired secret is dropped; one expiring sooner keeps its end.
	soon := now.Add(time.Minute)
	past := now.Add(-time.Minute)
	s, _ = Rotate([]SigningSecret{{Secret: "x", ExpiresAt: &past}, {Secret: "y", ExpiresAt: &soon}, {Secret: "b"}}, "c", now, hour)
	if len(s) != 3 || s[0].Secret != "y" || !s[0].ExpiresAt.Equal(soon) || s[1].Secret != "b" || s[2].Secret != "c" {
		t.Fatalf("mixed: %+v", s)
	}
	// Too many in grace: a conflict.
	var many []SigningSecret
	for range MaxSigningSecrets {
		many = append(many, SigningSecret{Secret: "k"})
	}
	if _, err := Rotate(many, "z", now, hour); ErrorCode(err) != ECONFLICT {
		t.Fatalf("too many: %v", err)
	}
	if s, err := Rotate(many, "z", now, 0); err != nil || len(s) != 1 {
		t.Fatalf("too many, no grace: %+v %v", s, err)
	}
}

func TestSigningKey(t *testing.T) {
	t.Parallel()
	s := NewSigningSecret()
	k := SigningKey(s)
	if len(k) != SigningSecretBytes {
		t.Fatalf("NewSigningSecret %q: key of %d bytes", s, len(k))
	}
	if got := string(SigningKey("dev-secret")); got != "dev-secret" {
		t.Errorf("plain secret key %q", got)
	}
	if got := string(SigningKey("whsec_" + base64.StdEncoding.EncodeToString([]byte("raw")))); got != "raw" {
		t.Errorf("whsec key %q", got)
	}
	if got := string(SigningKey("whsec_!!")); got != "whsec_!!" {
		t.Errorf("malformed whsec key %q", got)
	}
}
