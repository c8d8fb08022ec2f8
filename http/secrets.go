package http

import (
	"fmt"
	nethttp "net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/chronoshq/chronos"
)

// jobWithSecret is a job response carrying a signing secret that was just
// generated: the only time its value is shown.
type jobWithSecret struct {
	*chronos.Job
	SigningSecret string `json:"signing_secret"`
}

// rotateBody is the body of POST /v1/jobs/{id}/signing-secret.
type rotateBody struct {
	GraceSeconds chronos.Opt[int64] `json:"grace_seconds"`
}

// rotateSigningSecret is POST /v1/jobs/{id}/signing-secret: generate a new
// signing secret for the job and return it, once. The job's previous
// secrets (or, the first time, the cluster's SIGNING_SECRET) keep signing
// for grace_seconds (default 0: they stop now), so targets can switch
// without refusing a delivery.
func (s *Server) rotateSigningSecret(c *gin.Context) {
	var b rotateBody
	id, err := s.idAndNoQuery(c)
	if err == nil {
		_, err = s.optionalBody(c, &b)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	maxGrace := int64(chronos.MaxRotationGrace / time.Second)
	if b.GraceSeconds.Null || b.GraceSeconds.Value < 0 || b.GraceSeconds.Value > maxGrace {
		s.fail(c, invalid("grace_seconds", fmt.Sprintf("must be between 0 and %d", maxGrace)))
		return
	}
	secret := chronos.NewSigningSecret()
	j, err := s.db.RotateSigningSecret(c.Request.Context(), id, secret, time.Duration(b.GraceSeconds.Value)*time.Second)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(nethttp.StatusOK, jobWithSecret{jobUTC(j), secret})
}

// deleteSigningSecrets is DELETE /v1/jobs/{id}/signing-secret: the job's
// own secrets stop signing at once and its deliveries fall back to the
// cluster's SIGNING_SECRET.
func (s *Server) deleteSigningSecrets(c *gin.Context) {
	if j, ok := lookup(s, c, s.idNoQueryNoBody, s.db.DeleteSigningSecrets); ok {
		c.JSON(nethttp.StatusOK, jobUTC(j))
	}
}
