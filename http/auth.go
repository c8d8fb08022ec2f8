package http

import (
	"crypto/sha256"
	"crypto/subtle"
	nethttp "net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/chronoshq/chronos"
)

// hashKey turns a key into a fixed-length digest, so the comparison below
// takes the same time whatever the lengths of the presented and stored keys
// (subtle.ConstantTimeCompare returns early on a length mismatch).
func hashKey(k string) [32]byte { return sha256.Sum256([]byte(k)) }

// keyMatches compares the presented key with every configured key in
// constant time. It never stops at the first match, so the timing does not
// tell which key (or how many) matched.
func (s *Server) keyMatches(presented string) bool {
	h := hashKey(presented)
	match := 0
	for i := range s.keys {
		match |= subtle.ConstantTimeCompare(h[:], s.keys[i][:])
	}
	return match == 1
}

// authenticate guards /v1: Authorization: Bearer <key>, unless the
// operator disabled authentication.
func (s *Server) authenticate(c *gin.Context) {
	if s.cfg.AuthDisabled {
		c.Next()
		return
	}
	h := c.GetHeader("Authorization")
	scheme, key, ok := strings.Cut(h, " ")
	key = strings.TrimSpace(key)
	switch {
	case h == "":
		s.unauthorized(c, "", "missing Authorization header; send Authorization: Bearer <api key>")
	case !ok || !strings.EqualFold(scheme, "Bearer") || key == "":
		s.unauthorized(c, `error="invalid_request"`, "Authorization header must be Bearer <api key>")
	case !s.keyMatches(key):
		s.unauthorized(c, `error="invalid_token"`, "invalid API key")
	default:
		c.Next()
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
