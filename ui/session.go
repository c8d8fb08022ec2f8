package ui

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
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

// macKey is the key that signs the sessions of one API key: derived from
// its digest (so removing the key ends its sessions), its name and role,
// and the operator's session secret.
func (c *Console) macKey(name string) ([]byte, chronos.Role, bool) {
	if c.cfg.AuthDisabled {
		if name != anonymous {
			return nil, "", false
		}
		return hmacSum(c.secret, []byte("chronos console anonymous")), chronos.RoleWrite, true
	}
	k, ok := c.keys.Named(name)
	if !ok {
		return nil, "", false
	}
	m := hmac.New(sha256.New, []byte("chronos console session v1|"+c.cfg.SessionSecret))
	m.Write(k.Hash[:])
	m.Write([]byte("|" + k.Name + "|" + string(k.Role)))
	return m.Sum(nil), k.Role, true
}

func hmacSum(key, msg []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return m.Sum(nil)
}

var b64 = base64.RawURLEncoding

// issue returns the cookie value of a new session of the named key.
func (c *Console) issue(name string, now time.Time) (string, error) {
	key, _, ok := c.macKey(name)
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
// malformed, forged, expired, or its key is no longer configured.
func (c *Console) verify(value string, now time.Time) *session {
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
	key, role, ok := c.macKey(parts[0])
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
	return c.verify(ck.Value, time.Now())
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
