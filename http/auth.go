package http

import (
	"context"
	nethttp "net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/chronoshq/chronos"
)

// Caller is who made a request: the name and role of the API key it
// presented. Handlers read it with CallerOf; the audit history records its
// Name as "who".
type Caller struct {
	Name string
	Role Role
}

// anonymous is the caller when authentication is disabled.
var anonymous = Caller{Name: "anonymous", Role: RoleWrite}

const ctxCaller = "chronos.caller"

type callerKey struct{}

// CallerOf returns the caller of an authenticated request (the zero Caller
// before authentication or on an open route).
func CallerOf(c *gin.Context) Caller {
	v, _ := c.Get(ctxCaller)
	cl, _ := v.(Caller)
	return cl
}

// CallerFromContext returns the caller a request's context carries, for
// code below the handlers that sees only a context.Context.
func CallerFromContext(ctx context.Context) (Caller, bool) {
	cl, ok := ctx.Value(callerKey{}).(Caller)
	return cl, ok
}

// setCaller records the caller on the gin context (logs, handlers) and the
// request's context (code below the handlers).
func setCaller(c *gin.Context, cl Caller) {
	c.Set(ctxCaller, cl)
	ctx := context.WithValue(c.Request.Context(), callerKey{}, cl)
	c.Request = c.Request.WithContext(chronos.WithActor(ctx, cl.Name)) // the audit history's "who"
}

// matchKey returns the index of the configured key presented matches, or
// -1, in constant time (chronos.KeyRing.Match).
func (s *Server) matchKey(presented string) int { return chronos.KeyRing(s.keys).Match(presented) }

// authenticate guards /v1: Authorization: Bearer <key>, unless the
// operator disabled authentication. A read key may use GET routes only;
// anything else is a 403. The per-key rate limit applies after.
func (s *Server) authenticate(c *gin.Context) {
	if !s.identify(c) {
		return
	}
	if CallerOf(c).Role != RoleWrite && c.Request.Method != nethttp.MethodGet {
		writeEnvelope(c, nethttp.StatusForbidden, chronos.Errorf(chronos.EFORBIDDEN,
			"API key %q has role %s, which may not %s %s", CallerOf(c).Name, CallerOf(c).Role, c.Request.Method, c.Request.URL.Path))
		return
	}
	if !s.admit(c) {
		return
	}
	c.Next()
}

// identify checks the bearer key and records the caller; on failure it
// answers 401 and returns false.
func (s *Server) identify(c *gin.Context) bool {
	if s.cfg.AuthDisabled {
		setCaller(c, anonymous)
		return true
	}
	h := c.GetHeader("Authorization")
	scheme, key, ok := strings.Cut(h, " ")
	key = strings.TrimSpace(key)
	switch {
	case h == "":
		s.unauthorized(c, "", "missing Authorization header; send Authorization: Bearer <api key>")
		return false
	case !ok || !strings.EqualFold(scheme, "Bearer") || key == "":
		s.unauthorized(c, `error="invalid_request"`, "Authorization header must be Bearer <api key>")
		return false
	}
	i := s.matchKey(key)
	if i < 0 {
		s.unauthorized(c, `error="invalid_token"`, "invalid API key")
		return false
	}
	setCaller(c, Caller{Name: s.keys[i].Name, Role: s.keys[i].Role})
	return true
}

// guardUnknown answers a request for an unknown /v1 path or method: 401
// without a valid key, so nothing about the API's shape leaks to strangers;
// with one, the 404 or 405 that next writes.
func (s *Server) guardUnknown(next gin.HandlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		p := c.Request.URL.Path
		if (p == "/v1" || strings.HasPrefix(p, "/v1/")) && !s.identify(c) {
			return
		}
		next(c)
	}
}

func (s *Server) unauthorized(c *gin.Context, params, msg string) {
	v := `Bearer realm="chronos"`
	if params != "" {
		v += ", " + params
	}
	c.Header("WWW-Authenticate", v)
	writeEnvelope(c, nethttp.StatusUnauthorized, &chronos.Error{Code: chronos.EUNAUTHORIZED, Message: msg})
}
