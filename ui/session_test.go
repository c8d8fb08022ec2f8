package ui_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/reactor/reactortest"
	"github.com/chronoshq/chronos/sql/sqltest"
	"github.com/chronoshq/chronos/ui"
)

// forgeSession signs a session cookie of the named key as the console did
// before the cluster secret: under a key derived from API_KEYS alone (the
// key's sha256: digest, its name and role) and CONSOLE_SESSION_SECRET.
func forgeSession(digest [32]byte, name string, role chronos.Role, sessionSecret string) string {
	sum := func(key, msg []byte) []byte {
		m := hmac.New(sha256.New, key)
		m.Write(msg)
		return m.Sum(nil)
	}
	m := hmac.New(sha256.New, []byte("chronos console session v1|"+sessionSecret))
	m.Write(digest[:])
	m.Write([]byte("|" + name + "|" + string(role)))
	key := m.Sum(nil)
	payload := name + "|" + strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10) + "|" + hex.EncodeToString(make([]byte, 16))
	b64 := base64.RawURLEncoding
	return b64.EncodeToString([]byte(payload)) + "." + b64.EncodeToString(sum(key, []byte("session|"+payload)))
}

// sessionStatus is what GET /ui/jobs answers to a request carrying cookie.
func sessionStatus(t *testing.T, base, cookie string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/ui/jobs", nil)
	req.AddCookie(&http.Cookie{Name: "chronos_session", Value: cookie})
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestDigestAloneCannotSignASession: with API_KEYS holding only the
// sha256: digest of a write key and CONSOLE_SESSION_SECRET unset (the
// default), what the environment holds is not enough to mint a session:
// a cookie signed from the digest as the console used to is refused,
// while a real sign-in works, on every instance of the cluster (they
// share the database's secret) and on no other cluster.
func TestDigestAloneCannotSignASession(t *testing.T) {
	digest := sha256.Sum256([]byte(writeKey))
	keys := []string{"ops:write:sha256:" + hex.EncodeToString(digest[:])}
	dsn := sqltest.NewURL(t)
	serve := func(dsn string) *httptest.Server {
		in := reactortest.NewInstance(t, dsn, "")
		c := ui.New(ui.Config{Instance: in.Name, APIKeys: keys}, in.DB, in.Bus, in.Log)
		srv := httptest.NewServer(c.Handler())
		t.Cleanup(srv.Close)
		t.Cleanup(c.Close)
		return srv
	}
	a, b, other := serve(dsn), serve(dsn), serve(sqltest.NewURL(t))

	if code := sessionStatus(t, a.URL, forgeSession(digest, "ops", chronos.RoleWrite, "")); code != http.StatusSeeOther {
		t.Fatalf("a session forged from the digest in API_KEYS: %d, want 303 to sign in", code)
	}

	// A real sign-in on instance a.
	form := url.Values{"key": {writeKey}, "next": {"/ui/jobs"}}
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).PostForm(a.URL+"/ui/login", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie string
	for _, ck := range resp.Cookies() {
		if ck.Name == "chronos_session" {
			cookie = ck.Value
		}
	}
	if resp.StatusCode != http.StatusSeeOther || cookie == "" {
		t.Fatalf("sign in: %d, cookie %q", resp.StatusCode, cookie)
	}
	for name, want := range map[string]struct {
		base string
		code int
	}{"the instance that signed": {a.URL, http.StatusOK}, "another instance of the cluster": {b.URL, http.StatusOK},
		"an instance of another cluster": {other.URL, http.StatusSeeOther}} {
		if code := sessionStatus(t, want.base, cookie); code != want.code {
			t.Errorf("the session on %s: %d, want %d", name, code, want.code)
		}
	}
}
