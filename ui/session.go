package ui

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	nethttp "net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/chronoshq/chronos"
)

// SessionTTL is how long a console session lasts after sign-in.
const SessionTTL = 12 * time.Hour

const (
	cookieName = "chronos_session"
	anonymous  = "anonymous"
)

// session is a signed-in caller: the API key's name and role, and the
// CSRF token of its forms.
type session struct {
	Name    string
	Role    chronos.Role
	Expires time.Time
	CSRF    string
}

// CanWrite reports whether the session may change anything.
func (s *session) CanWrite() bool { return s != nil && s.Role == chronos.RoleWrite }

// sessionSecretName names the console's row in cluster_secrets.
const sessionSecretName = "console-session"

// sessionRoot is the root of every session key: the cluster's random
// secret (sql.ClusterSecret, shared by every instance through the
// database, never in the environment), mixed with the operator's
// CONSOLE_SESSION_SECRET when set. It is read once and then kept; a read
// that fails is tried again by the next request.
func (c *Console) sessionRoot(ctx context.Context) ([]byte, error) {
	c.rootMu.Lock()
	defer c.rootMu.Unlock()
	if c.root != nil {
		return c.root, nil
	}
	secret, err := c.db.ClusterSecret(ctx, sessionSecretName)
	if err != nil {
		return nil, fmt.Errorf("console session key: %w", err)
	}
	c.root = hmacSum(secret, []byte("chronos console session v2|"+c.cfg.SessionSecret))
	return c.root, nil
}

// macKey is the key that signs the sessions of one API key: derived from
// the session root (so API_KEYS alone, digests included, cannot sign), the
// key's digest (so removing the key ends its sessions), its name and role.
// ok is false for a name that is no key; err when the root cannot be read.
func (c *Console) macKey(ctx context.Context, name string) (key []byte, role chronos.Role, ok bool, err error) {
	if c.cfg.AuthDisabled && name != anonymous {
		return nil, "", false, nil
	}
	var k chronos.APIKey
	if !c.cfg.AuthDisabled {
		if k, ok = c.keys.Named(name); !ok {
			return nil, "", false, nil
		}
	}
	root, err := c.sessionRoot(ctx)
	if err != nil {
		return nil, "", false, err
	}
	if c.cfg.AuthDisabled {
		return hmacSum(root, []byte("anonymous")), chronos.RoleWrite, true, nil
	}
	m := hmac.New(sha256.New, root)
	m.Write(k.Hash[:])
	m.Write([]byte("|" + k.Name + "|" + string(k.Role)))
	return m.Sum(nil), k.Role, true, nil
}

func hmacSum(key, msg []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return m.Sum(nil)
}

var b64 = base64.RawURLEncoding

// issue returns the cookie value of a new session of the named key.
func (c *Console) issue(ctx context.Context, name string, now time.Time) (string, error) {
	key, _, ok, err := c.macKey(ctx, name)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", errors.New("unknown key")
	}
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	payload := name + "|" + strconv.FormatInt(now.Add(SessionTTL).Unix(), 10) + "|" + hex.EncodeToString(nonce)
	return b64.EncodeToString([]byte(payload)) + "." + b64.EncodeToString(hmacSum(key, []byte("session|"+payload))), nil
}

// verify returns the session a cookie value stands for, or nil when it is
// malformed, forged, expired, or its key is no longer configured (or the
// session key cannot be read: logged).
func (c *Console) verify(ctx context.Context, value string, now time.Time) *session {
	p64, m64, ok := strings.Cut(value, ".")
	if !ok {
		return nil
	}
	pb, err1 := b64.DecodeString(p64)
	mac, err2 := b64.DecodeString(m64)
	if err1 != nil || err2 != nil {
		return nil
	}
	payload := string(pb)
	parts := strings.Split(payload, "|")
	if len(parts) != 3 {
		return nil
	}
	key, role, ok, err := c.macKey(ctx, parts[0])
	if err != nil {
		c.log.Error("console: verify session", "error", err.Error())
		return nil
	}
	if !ok || !hmac.Equal(mac, hmacSum(key, []byte("session|"+payload))) {
		return nil
	}
	exp, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || now.Unix() >= exp {
		return nil
	}
	return &session{Name: parts[0], Role: role, Expires: time.Unix(exp, 0).UTC(),
		CSRF: b64.EncodeToString(hmacSum(key, []byte("csrf|"+payload)))}
}

// setCookie sets (or, with an empty value, clears) the session cookie.
func setCookie(w nethttp.ResponseWriter, r *nethttp.Request, value string, expires time.Time) {
	ck := &nethttp.Cookie{Name: cookieName, Value: value, Path: Prefix, HttpOnly: true,
		SameSite: nethttp.SameSiteStrictMode, Secure: r.TLS != nil}
	if value == "" {
		ck.MaxAge = -1
	} else {
		ck.Expires = expires
	}
	nethttp.SetCookie(w, ck)
}

// sessionOf returns the request's session, or nil.
func (c *Console) sessionOf(r *nethttp.Request) *session {
	ck, err := r.Cookie(cookieName)
	if err != nil {
		return nil
	}
	return c.verify(r.Context(), ck.Value, time.Now())
}

// sameOrigin refuses a cross-site request: a browser says where a request
// comes from in Sec-Fetch-Site and Origin. Only the host of Origin is
// compared, so a proxy that terminates TLS in front of the instance does
// not make every form a 403. A request that says neither (not a browser)
// is left to the CSRF token.
func sameOrigin(r *nethttp.Request) bool {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" {
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}
