// Package ui is the web console served by every chronos instance at /ui/:
// server-rendered html/template pages, htmx (vendored in static/, with its
// license) for in-place interactions, and the event tap streamed to the
// browser. Everything is embedded in the binary; building it needs no
// Node.js, and the pages work without internet access.
//
// Sign-in takes an API key (the same keys, names and roles as the REST
// API, chronos.APIKey) and sets a session cookie: HttpOnly, SameSite=Strict,
// Secure when the request came over TLS, valid for SessionTTL. The cookie
// is stateless, signed with HMAC-SHA256 under a key derived from a random
// per-cluster secret kept in the database (sql.ClusterSecret, created once
// by whichever instance asks first), Config.SessionSecret when set, and
// the API key's digest, name and role. So every instance of the cluster
// accepts it, removing an API key ends its sessions, and what the
// environment holds (API_KEYS, digests included) is not enough to forge
// one. Signing out clears the cookie.
//
// Every form that changes something carries a CSRF token bound to the
// session, and the server also refuses cross-site requests by their Origin
// and Sec-Fetch-Site headers. A read key sees every page; the controls
// that change something are not shown to it, and the server answers 403
// if it sends them anyway.
//
// Every page reads through the same sql functions as the API endpoint that
// shows the same thing (sql.Jobs for the job search, sql.AllRuns and
// sql.RedriveAll for the dead letters, sql.Runs for a job's runs, paged
// by the same keyset cursor, sql.History for a job's audit history,
// sql.RotateSigningSecret for its signing secrets, chronos.Job.Preview
// for fire times), so the two never disagree;
// a change made in the console is audited under the API key's name, as
// through the API.
//
// Like package http, ui uses the domain, sql and bus and never the reactor:
// cmd mounts Console.Handler beside the API's handler.
package ui
