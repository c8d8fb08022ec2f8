package chronos

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Redacted replaces the value of a secret header in every response: the
// value is write-only. A PATCH that sends Redacted back for a secret header
// the job has keeps the stored value, so a job read, edited and written
// back keeps its credentials.
const Redacted = "[redacted]"

// alwaysSecretHeaders hold credentials whatever the user marks.
var alwaysSecretHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie"}

// IsSecretHeader reports whether the value of header name is masked for j:
// Authorization, Proxy-Authorization, Cookie, and the headers the user
// listed in secret_headers (names compare case-insensitively).
func (j *Job) IsSecretHeader(name string) bool {
	for _, s := range alwaysSecretHeaders {
		if strings.EqualFold(s, name) {
			return true
		}
	}
	for _, s := range j.SecretHeaders {
		if strings.EqualFold(s, name) {
			return true
		}
	}
	return false
}

// RedactedHeaders returns j's headers with every secret value replaced by
// Redacted, for a response, event or log line. The target still receives
// the values.
func (j *Job) RedactedHeaders() map[string]string {
	out := make(map[string]string, len(j.Headers))
	for k, v := range j.Headers {
		if j.IsSecretHeader(k) {
			v = Redacted
		}
		out[k] = v
	}
	return out
}

// Redacted returns a shallow copy of j fit for the wire: secret header
// values masked. Signing secret values never marshal (json:"-").
func (j *Job) Redacted() *Job {
	c := *j
	c.Headers = j.RedactedHeaders()
	return &c
}

// validateSecretHeaders checks secret_headers: valid header names, each
// once, at most MaxHeaders.
func validateSecretHeaders(names []string, f map[string]string) {
	if len(names) > MaxHeaders {
		f["secret_headers"] = fmt.Sprintf("at most %d names", MaxHeaders)
		return
	}
	seen := map[string]bool{}
	for _, n := range names {
		c := http.CanonicalHeaderKey(n)
		switch {
		case !validHeaderName(n):
			f["secret_headers"] = fmt.Sprintf("invalid header name %q", n)
		case seen[c]:
			f["secret_headers"] = fmt.Sprintf("header %q is listed twice", n)
		}
		seen[c] = true
	}
}

// SigningSecret is one of a job's own signing secrets. Its value is
// write-only: shown once when generated, never marshalled afterwards.
type SigningSecret struct {
	Secret string `json:"-"`
	// ClusterDefault stands for the cluster's SIGNING_SECRET, kept
	// signing through the grace period of a job's first own secret.
	ClusterDefault bool       `json:"cluster_default,omitempty"`
	CreatedAt      time.Time  `json:"created_at"` // when it became the job's
	ExpiresAt      *time.Time `json:"expires_at"` // nil: current; set: signs until then (rotation grace)
}

// Active reports whether s still signs at t.
func (s SigningSecret) Active(t time.Time) bool { return s.ExpiresAt == nil || t.Before(*s.ExpiresAt) }

// Limits of per-job signing secrets.
const (
	MaxSecretsInGrace  = 8                     // secrets signing through a rotation's grace period at once (the API's promise)
	MaxSigningSecrets  = MaxSecretsInGrace + 1 // those in grace and the current one
	MaxRotationGrace   = 30 * 24 * time.Hour   // longest grace period of a rotation
	SigningSecretBytes = 32                    // random bytes of a generated secret
)

// SigningSecretPrefix starts every secret in the Standard Webhooks format:
// whsec_ followed by the base64 of the key bytes.
const SigningSecretPrefix = "whsec_"

// NewSigningSecret returns a fresh random secret in the Standard Webhooks
// format.
func NewSigningSecret() string {
	b := make([]byte, SigningSecretBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return SigningSecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// SigningKey returns the HMAC key of a secret: the base64-decoded bytes
// after whsec_ for a Standard Webhooks secret, else the secret's own bytes
// (a SIGNING_SECRET set before the whsec_ format, or chosen by hand).
func SigningKey(secret string) []byte {
	if rest, ok := strings.CutPrefix(secret, SigningSecretPrefix); ok {
		if b, err := base64.StdEncoding.DecodeString(rest); err == nil && len(b) > 0 {
			return b
		}
	}
	return []byte(secret)
}

// Rotate returns the secrets of a job after a rotation at now with the
// given grace: current gets appended as the one current secret; the
// secrets that were current sign on until now+grace (or stop at once when
// grace is 0); secrets whose grace has passed are dropped, and one already
// expiring keeps its earlier end. A job's first own secret with a grace
// keeps the cluster's SIGNING_SECRET signing through it, so targets can
// switch without a gap. ECONFLICT when more than MaxSecretsInGrace would
// be in their grace period beside the new current one (the limit counts
// the secrets in grace, as the API documents it, not the current one).
func Rotate(old []SigningSecret, current string, now time.Time, grace time.Duration) ([]SigningSecret, error) {
	until := now.Add(grace)
	out := make([]SigningSecret, 0, len(old)+1)
	if len(old) == 0 && grace > 0 {
		out = append(out, SigningSecret{ClusterDefault: true, CreatedAt: now, ExpiresAt: &until})
	}
	for _, s := range old {
		if grace <= 0 || !s.Active(now) {
			continue
		}
		if s.ExpiresAt == nil || s.ExpiresAt.After(until) {
			s.ExpiresAt = &until
		}
		out = append(out, s)
	}
	out = append(out, SigningSecret{Secret: current, CreatedAt: now})
	if inGrace := len(out) - 1; inGrace > MaxSecretsInGrace {
		return nil, Errorf(ECONFLICT, "this rotation would leave %d signing secrets in their grace period, at most %d may be; rotate with grace_seconds 0 (it ends them now) or wait until the oldest expires", inGrace, MaxSecretsInGrace)
	}
	return out, nil
}
