package ui

import (
	nethttp "net/http"
	"strconv"
	"strings"
	"time"

	"github.com/chronoshq/chronos"
)

// rotateSecret is POST /ui/jobs/{id}/signing-secret: generate the job's
// first own signing secret, or rotate to a new one, as POST
// /v1/jobs/{id}/signing-secret does; the secrets that signed until now
// keep signing for grace_seconds. The answer is a page that shows the new
// secret, once: it is never shown again, and the page is not cached.
func (c *Console) rotateSecret(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	id, ok := c.pathID(w, r, s)
	if !ok {
		return
	}
	maxGrace := int(chronos.MaxRotationGrace / time.Second)
	grace, err := strconv.Atoi(cmpOr(strings.TrimSpace(r.PostForm.Get("grace_seconds")), "0"))
	if err != nil || grace < 0 || grace > maxGrace {
		c.fail(w, r, s, nethttp.StatusBadRequest, "The grace period must be a whole number of seconds between 0 and "+strconv.Itoa(maxGrace)+".")
		return
	}
	secret := chronos.NewSigningSecret()
	j, err := c.db.RotateSigningSecret(r.Context(), id, secret, time.Duration(grace)*time.Second)
	if err != nil {
		c.failErr(w, r, s, err)
		return
	}
	c.log.Info("console: signing secret rotated", "job_id", id, "grace_seconds", grace, "key", s.Name)
	w.Header().Set("Cache-Control", "no-store")
	c.render(w, r, s, nethttp.StatusOK, "secret", "Signing secret of "+j.Name,
		map[string]any{"Job": j.Redacted(), "Secret": secret, "Grace": grace})
}

// deleteSecrets is POST /ui/jobs/{id}/signing-secret/delete: the job's own
// secrets stop signing at once and the cluster's SIGNING_SECRET signs its
// deliveries again, as DELETE /v1/jobs/{id}/signing-secret.
func (c *Console) deleteSecrets(w nethttp.ResponseWriter, r *nethttp.Request, s *session) {
	id, ok := c.pathID(w, r, s)
	if !ok {
		return
	}
	if _, err := c.db.DeleteSigningSecrets(r.Context(), id); err != nil {
		c.failErr(w, r, s, err)
		return
	}
	c.log.Info("console: signing secrets deleted", "job_id", id, "key", s.Name)
	c.redirectDone(w, r, Prefix+"jobs/"+strconv.FormatInt(id, 10)+"#secrets", "secrets-deleted")
}
