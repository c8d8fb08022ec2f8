package chronos

import (
	"encoding/base64"
	"fmt"
	"strings"
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

// TestRotateGraceLimit: the API documents MaxSecretsInGrace (8) secrets in
// their grace period at once. Rotating a job's first secret with a grace
// puts the cluster default in grace, so 8 rotations with a grace leave 8
// in grace beside the current one; the 9th is a conflict.
func TestRotateGraceLimit(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var s []SigningSecret
	for i := 1; i <= 8; i++ {
		next, err := Rotate(s, fmt.Sprintf("s%d", i), now, time.Hour)
		if err != nil {
			t.Fatalf("rotation %d with grace: %v", i, err)
		}
		s = next
		if got := len(s) - 1; got != i {
			t.Fatalf("rotation %d: %d in grace, want %d", i, got, i)
		}
	}
	if len(s) != 9 || s[len(s)-1].ExpiresAt != nil {
		t.Fatalf("after 8 rotations: %+v", s)
	}
	_, err := Rotate(s, "one-too-many", now, time.Hour)
	if ErrorCode(err) != ECONFLICT || !strings.Contains(err.Error(), "at most 8") {
		t.Fatalf("rotation 9 with grace: %v, want a conflict naming the limit", err)
	}
	// Once the oldest have expired, a rotation with a grace fits again.
	if _, err := Rotate(s, "later", now.Add(2*time.Hour), time.Hour); err != nil {
		t.Fatalf("after the grace: %v", err)
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
