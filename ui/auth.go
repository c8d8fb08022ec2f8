package ui

import (
	"crypto/subtle"
	nethttp "net/http"
	"net/url"
	"strings"
	"time"

	"github.com/chronoshq/chronos"
)

// maxFormBytes limits the body of a console form.
const maxFormBytes = 256 << 10

// headers sets what every console response carries: a content security
// policy that allows no inline script, no framing and no foreign origin,
// so that even a string that escaped escaping could not run.
func (c *Console) headers(h nethttp.Handler) nethttp.Handler {
	return nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
			"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "same-origin")
		if !strings.HasPrefix(r.URL.Path, Prefix+"static/") {
			hd.Set("Cache-Control", "no-store")
		}
		h.ServeHTTP(w, r)
	})
}

// handlerFunc is a console handler: it gets the caller's session.
type handlerFunc func(w nethttp.ResponseWriter, r *nethttp.Request, s *session)

// page guards a GET: a request without a session is sent to sign in (the
// event stream, which a browser cannot redirect, gets a 401).
func (c *Console) page(fn handlerFunc) nethttp.Handler {
	return c.headers(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		s := c.ensureSession(w, r)
		if s == nil {
			// Neither the event stream nor an htmx request can show a
			// redirected sign-in page: they get a 401.
			if r.URL.Path == Prefix+"events" || r.Header.Get("HX-Request") == "true" {
				nethttp.Error(w, "sign in first", nethttp.StatusUnauthorized)
				return
			}
			nethttp.Redirect(w, r, Prefix+"login?next="+url.QueryEscape(r.URL.RequestURI()), nethttp.StatusSeeOther)
			return
		}
		fn(w, r, s)
	}))
}

// action guards a POST that changes something: a session, a same-origin
// request, a valid CSRF token, and the write role (403 otherwise, whether
// or not the page showed the control).
func (c *Console) action(fn handlerFunc) nethttp.Handler {
	return c.guarded(true, fn)
}

func (c *Console) guarded(needWrite bool, fn handlerFunc) nethttp.Handler {
	return c.headers(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		r.Body = nethttp.MaxBytesReader(w, r.Body, maxFormBytes)
		s := c.ensureSession(w, r)
		if s == nil {
			c.fail(w, r, nil, nethttp.StatusUnauthorized, "Your session has ended. Sign in again.")
			return
		}
		if err := r.ParseForm(); err != nil {
			c.fail(w, r, s, nethttp.StatusBadRequest, "The form could not be read.")
			return
		}
		tok := r.PostForm.Get("csrf")
		if tok == "" {
			tok = r.Header.Get("X-CSRF-Token")
		}
		if !sameOrigin(r) || subtle.ConstantTimeCompare([]byte(tok), []byte(s.CSRF)) != 1 {
			c.fail(w, r, s, nethttp.StatusForbidden, "This form is stale or came from another site. Reload the page and try again.")
			return
		}
		if needWrite && c.readOnly(w, r, s) {
			return
		}
		// The audit history's "who": the key's name, as the API records it.
		fn(w, r.WithContext(chronos.WithActor(r.Context(), s.Name)), s)
	}))
}

// ensureSession returns the request's session. With authentication
// disabled everyone is the anonymous writer, and gets a session cookie on
// the first request so that the CSRF token works the same way.
func (c *Console) ensureSession(w nethttp.ResponseWriter, r *nethttp.Request) *session {
	if s := c.sessionOf(r); s != nil {
		return s
	}
	if !c.cfg.AuthDisabled {
		return nil
	}
	now := time.Now()
	v, err := c.issue(r.Context(), anonymous, now)
	if err != nil {
		c.log.Error("console: start an anonymous session", "error", err.Error())
		return nil
	}
	setCookie(w, r, v, now.Add(SessionTTL))
	return c.verify(r.Context(), v, now)
}

// loginPage is GET /ui/login.
func (c *Console) loginPage(w nethttp.ResponseWriter, r *nethttp.Request) {
	next := localPath(r.URL.Query().Get("next"), Prefix)
	if c.sessionOf(r) != nil || c.cfg.AuthDisabled {
		nethttp.Redirect(w, r, next, nethttp.StatusSeeOther)
		return
	}
	c.render(w, r, nil, nethttp.StatusOK, "login", "Sign in", map[string]any{"Next": next})
}

// login is POST /ui/login: the API key in, a session cookie out.
func (c *Console) login(w nethttp.ResponseWriter, r *nethttp.Request) {
	r.Body = nethttp.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil || !sameOrigin(r) {
		c.fail(w, r, nil, nethttp.StatusBadRequest, "The sign-in form could not be read.")
		return
	}
	next := localPath(r.PostForm.Get("next"), Prefix)
	i := c.keys.Match(strings.TrimSpace(r.PostForm.Get("key")))
	if i < 0 {
		c.log.Info("console sign-in refused", "remote", r.RemoteAddr)
		c.render(w, r, nil, nethttp.StatusUnauthorized, "login", "Sign in", map[string]any{"Next": next, "Error": "That API key is not valid."})
		return
	}
	now := time.Now()
	v, err := c.issue(r.Context(), c.keys[i].Name, now)
	if err != nil {
		c.log.Error("console: start a session", "key", c.keys[i].Name, "error", err.Error())
		c.fail(w, r, nil, nethttp.StatusInternalServerError, "Could not start a session.")
		return
	}
	c.log.Info("console sign-in", "key", c.keys[i].Name, "role", string(c.keys[i].Role))
	setCookie(w, r, v, now.Add(SessionTTL))
	nethttp.Redirect(w, r, next, nethttp.StatusSeeOther)
}

// logout is POST /ui/logout.
func (c *Console) logout(w nethttp.ResponseWriter, r *nethttp.Request, _ *session) {
	setCookie(w, r, "", time.Time{})
	nethttp.Redirect(w, r, Prefix+"login", nethttp.StatusSeeOther)
}

// localPath returns p when it is a path of the console (never another
// site: no scheme, no //host, no backslash tricks), else def.
func localPath(p, def string) string {
	if !strings.HasPrefix(p, Prefix) || strings.ContainsAny(p, "\\\r\n") || strings.HasPrefix(p, "//") {
		return def
	}
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" {
		return def
	}
	return p
}
