package chronos

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func TestParseAPIKey(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte("s3cret"))
	digest := hex.EncodeToString(sum[:])
	for _, tc := range []struct {
		entry string
		name  string
		role  Role
	}{
		{"s3cret", "key-" + digest[:8], RoleWrite},
		{"ci:s3cret", "ci", RoleWrite},
		{"grafana:read:s3cret", "grafana", RoleRead},
		{"deploy:write:s3cret", "deploy", RoleWrite},
		{"sha256:" + digest, "key-" + digest[:8], RoleWrite},
		{"sha256:" + strings.ToUpper(digest), "key-" + digest[:8], RoleWrite},
		{"ops:sha256:" + digest, "ops", RoleWrite},
		{"viewer:read:sha256:" + digest, "viewer", RoleRead},
		{"  padded:read:s3cret  ", "padded", RoleRead},
	} {
		k, err := ParseAPIKey(tc.entry)
		if err != nil {
			t.Errorf("ParseAPIKey(%q): %v", tc.entry, err)
			continue
		}
		if k.Name != tc.name || k.Role != tc.role || k.Hash != sum {
			t.Errorf("ParseAPIKey(%q) = %s %s %x, want %s %s %x", tc.entry, k.Name, k.Role, k.Hash, tc.name, tc.role, sum)
		}
	}
	for _, bad := range []string{"", "  ", "name:", "n:admin:s3cret", "sha256:abc", "sha256:" + digest + "00",
		"bad name:s3cret", ":s3cret", "a:b:c:d", "-x:s3cret"} {
		_, err := ParseAPIKey(bad)
		if err == nil {
			t.Errorf("ParseAPIKey(%q) accepted", bad)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("ParseAPIKey(%q): error quotes the key: %v", bad, err)
		}
	}
	if _, err := ParseAPIKeys([]string{"a:k1", "a:k2"}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("duplicate names: %v", err)
	}
	if _, err := ParseAPIKeys([]string{"a:k1", "b:sha256:" + hex.EncodeToString(func() []byte { s := sha256.Sum256([]byte("k1")); return s[:] }())}); err == nil {
		t.Error("the same key twice (once hashed) accepted")
	}
}
