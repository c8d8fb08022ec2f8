package chronos

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
)

// Role is what an API key may do. The API and the console share keys,
// roles and the way a presented key is matched (KeyRing).
type Role string

// Roles of API keys.
const (
	// RoleRead may use GET routes, the event tap included.
	RoleRead Role = "read"
	// RoleWrite may use every route.
	RoleWrite Role = "write"
)

// APIKey is one configured key: a name (what logs and the audit history
// show), a role, and the SHA-256 of the key itself. The plaintext is never
// kept.
type APIKey struct {
	Name string
	Role Role
	Hash [32]byte
}

var keyNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// ParseAPIKey parses one API_KEYS entry:
//
//	key                  full access (write), named key-<8 hex of its SHA-256>
//	name:key             full access, named
//	name:role:key        role read or write
//
// where key may be given as sha256:<64 hex digits>, the SHA-256 of the key,
// so the environment holds no plaintext. Keys may not contain ':'. Errors
// never quote the key.
func ParseAPIKey(entry string) (APIKey, error) {
	entry = strings.TrimSpace(entry)
	var head, key string
	hasHead := true
	if i := strings.Index(entry, "sha256:"); i == 0 || (i > 0 && entry[i-1] == ':') {
		head, key, hasHead = strings.TrimSuffix(entry[:i], ":"), entry[i:], i > 0
	} else if i := strings.LastIndexByte(entry, ':'); i >= 0 {
		head, key = entry[:i], entry[i+1:]
	} else {
		hasHead = false
		key = entry
	}
	var k APIKey
	if hexDigest, ok := strings.CutPrefix(key, "sha256:"); ok {
		b, err := hex.DecodeString(hexDigest)
		if err != nil || len(b) != sha256.Size {
			return APIKey{}, fmt.Errorf("sha256: must be followed by the 64 hex digits of the key's SHA-256")
		}
		copy(k.Hash[:], b)
	} else {
		if strings.TrimSpace(key) == "" {
			return APIKey{}, fmt.Errorf("the key is empty")
		}
		k.Hash = sha256.Sum256([]byte(key))
	}
	k.Role = RoleWrite
	if hasHead {
		name, role, hasRole := strings.Cut(head, ":")
		if hasRole {
			switch Role(role) {
			case RoleRead, RoleWrite:
				k.Role = Role(role)
			default:
				return APIKey{}, fmt.Errorf("key %q: role must be read or write (keys may not contain ':')", name)
			}
		}
		if !keyNameRE.MatchString(name) {
			return APIKey{}, fmt.Errorf("key name must be 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit")
		}
		k.Name = name
	} else {
		k.Name = "key-" + hex.EncodeToString(k.Hash[:4])
	}
	return k, nil
}

// ParseAPIKeys parses every entry, refusing duplicate names and keys. The
// error names the entry by position, never by its key.
func ParseAPIKeys(entries []string) ([]APIKey, error) {
	out := make([]APIKey, 0, len(entries))
	names := map[string]bool{}
	hashes := map[[32]byte]bool{}
	for i, e := range entries {
		k, err := ParseAPIKey(e)
		if err != nil {
			return nil, fmt.Errorf("API key %d: %w", i+1, err)
		}
		if names[k.Name] {
			return nil, fmt.Errorf("API key %d: the name %q is used twice", i+1, k.Name)
		}
		if hashes[k.Hash] {
			return nil, fmt.Errorf("API key %d (%s): the same key is configured twice", i+1, k.Name)
		}
		names[k.Name], hashes[k.Hash] = true, true
		out = append(out, k)
	}
	return out, nil
}

// KeyRing is the set of configured keys a presented key is matched against.
type KeyRing []APIKey

// Match compares the presented key with every key of the ring in constant
// time: the SHA-256 digests have one length whatever the lengths of the
// keys (subtle.ConstantTimeCompare returns early on a length mismatch), and
// the loop never stops at the first match, so the timing does not tell
// which key (or how many) matched. It returns the index of the matching
// key, or -1.
func (r KeyRing) Match(presented string) int {
	h := sha256.Sum256([]byte(presented))
	idx := -1
	for i := range r {
		eq := subtle.ConstantTimeCompare(h[:], r[i].Hash[:])
		idx = subtle.ConstantTimeSelect(eq, i, idx)
	}
	return idx
}

// Named returns the key called name, if the ring has one.
func (r KeyRing) Named(name string) (APIKey, bool) {
	for _, k := range r {
		if k.Name == name {
			return k, true
		}
	}
	return APIKey{}, false
}
