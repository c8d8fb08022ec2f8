package ui

import (
	"context"
	nethttp "net/http"

	"github.com/chronoshq/chronos"
)

// The preambles of the console's handlers on /ui/{kind}/{id}: what they
// read of the path and check of the session before they show or change
// one thing, in one place so every page refuses alike.

// byPathID is the id of the path and what do (a lookup or an action)
// gives for it, or false once the error page is written.
func byPathID[T any](c *Console, w nethttp.ResponseWriter, r *nethttp.Request, s *session, do func(context.Context, int64) (T, error)) (int64, T, bool) {
	var v T
	id, ok := c.pathID(w, r, s)
	if !ok {
		return 0, v, false
	}
	v, err := do(r.Context(), id)
	if err != nil {
		c.failErr(w, r, s, err)
		return 0, v, false
	}
	return id, v, true
}

// newRunByPathID is byPathID for an action that makes a run (a trigger,
// a redrive): the new run is announced on the local bus, so this
// instance's dispatcher starts it at once, and logged as msg with the
// path's id under idKey and the new run's under runKey.
func (c *Console) newRunByPathID(w nethttp.ResponseWriter, r *nethttp.Request, s *session, do func(context.Context, int64) (*chronos.Run, error),
	msg, idKey, runKey string) (int64, *chronos.Run, bool) {
	id, run, ok := byPathID(c, w, r, s, do)
	if ok {
		c.announce(run)
		c.log.Info(msg, idKey, id, runKey, run.ID, "key", s.Name)
	}
	return id, run, ok
}

// jobToChange is the job of the path, for a page that changes it: a 404
// for a bad id, then a 403 for a key that may not write, then the job.
func (c *Console) jobToChange(w nethttp.ResponseWriter, r *nethttp.Request, s *session) (*chronos.Job, bool) {
	id, ok := c.pathID(w, r, s)
	if !ok || c.readOnly(w, r, s) {
		return nil, false
	}
	j, err := c.db.Job(r.Context(), id)
	if err != nil {
		c.failErr(w, r, s, err)
		return nil, false
	}
	return j, true
}

// readOnly answers 403 when the session's key may look but not change,
// and says whether it did.
func (c *Console) readOnly(w nethttp.ResponseWriter, r *nethttp.Request, s *session) bool {
	if s.CanWrite() {
		return false
	}
	c.fail(w, r, s, nethttp.StatusForbidden, "Your API key ("+s.Name+") has the read role: it may look, not change.")
	return true
}
