package http

import (
	"context"
	"encoding/json"
	"fmt"
	nethttp "net/http"
	"slices"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/chronoshq/chronos"
	"github.com/chronoshq/chronos/sql"
)

// batchBodyFactor is how many times Config.MaxBodyBytes a POST
// /v1/jobs/batch body may be: it carries up to sql.MaxJobBatch jobs.
const batchBodyFactor = 16

// jobBatchPath is the route of the batch create (limitBody allows it a
// larger body).
const jobBatchPath = "/v1/jobs/batch"

// jobBatchBody is the body of POST /v1/jobs/batch: each job as POST
// /v1/jobs takes it.
type jobBatchBody struct {
	Jobs []json.RawMessage `json:"jobs"`
}

// createJobs is POST /v1/jobs/batch: up to sql.MaxJobBatch jobs created
// all or nothing, in one transaction. A refusal names each failing job's
// field as "jobs[i].field" (400, or 409 when the only failures are taken
// names); nothing is created then. The answer lists the created jobs in
// the order given.
func (s *Server) createJobs(c *gin.Context) {
	var b jobBatchBody
	if _, err := withBody(s, c, noQuery, &b, `a JSON object {"jobs": [...]} is required`); err != nil {
		s.fail(c, err)
		return
	}
	switch {
	case len(b.Jobs) == 0:
		s.fail(c, invalid("jobs", "at least one job is required"))
		return
	case len(b.Jobs) > sql.MaxJobBatch:
		s.fail(c, invalid("jobs", "at most "+strconv.Itoa(sql.MaxJobBatch)+" jobs per batch"))
		return
	}
	jobs := make([]*chronos.Job, len(b.Jobs))
	secrets := make([]string, len(b.Jobs))
	bad := map[string]string{}
	for i, raw := range b.Jobs {
		j, secret, err := s.batchJob(raw)
		if err != nil {
			prefixFields(bad, i, err)
			continue
		}
		jobs[i], secrets[i] = j, secret
	}
	if len(bad) > 0 {
		s.fail(c, chronos.InvalidFields(bad))
		return
	}
	shown := slices.ContainsFunc(secrets, func(v string) bool { return v != "" }) // a secret shown once
	s.create(c, func(ctx context.Context) error { return s.db.CreateJobs(ctx, jobs) },
		func() (sql.IdempotentResponse, error) { return batchAnswer(jobs, secrets) }, shown)
}

// batchJob builds one job of a batch as createJob does, with its
// generated signing secret if it asked for one.
func (s *Server) batchJob(raw json.RawMessage) (*chronos.Job, string, error) {
	if t := string(trimSpace(raw)); t == "" || t == "null" {
		return nil, "", invalid("body", "a JSON object describing the job is required")
	}
	var u chronos.JobUpdate
	if _, err := decodeObject(raw, &u); err != nil {
		return nil, "", err
	}
	return s.newJob(&u)
}

// prefixFields adds job i's error to bad, its fields named
// "jobs[i].field" (a complaint about the item as a whole is "jobs[i]").
func prefixFields(bad map[string]string, i int, err error) {
	prefix := "jobs[" + strconv.Itoa(i) + "]"
	e, ok := err.(*chronos.Error)
	if !ok {
		bad[prefix] = err.Error()
		return
	}
	if len(e.Fields) == 0 {
		bad[prefix] = e.Message
	}
	for f, msg := range e.Fields {
		if f == "body" {
			bad[prefix] = msg
			continue
		}
		bad[prefix+"."+f] = msg
	}
}

// batchAnswer is the 201 of a created batch.
//
// The body is {"jobs": [...]}, json.Marshal's bytes, written a job at a time
// with Job.AppendJSON (encoding the batch by reflection was a tenth of
// its CPU in Go); a job with a generated secret is jobWithSecret's
// object: the job's members, then signing_secret.
func batchAnswer(jobs []*chronos.Job, secrets []string) (sql.IdempotentResponse, error) {
	b := make([]byte, 0, 1024*len(jobs))
	b = append(b, `{"jobs":[`...)
	for i, j := range jobs {
		if i > 0 {
			b = append(b, ',')
		}
		b = jobUTC(j).AppendJSON(b)
		if secrets[i] != "" {
			secret, err := json.Marshal(secrets[i])
			if err != nil {
				return sql.IdempotentResponse{}, fmt.Errorf("encode a job's signing secret: %w", err)
			}
			b = append(append(append(b[:len(b)-1], `,"signing_secret":`...), secret...), '}')
		}
	}
	b = append(b, "]}"...)
	return sql.IdempotentResponse{Status: nethttp.StatusCreated, ContentType: jsonContentType, Body: b}, nil
}
