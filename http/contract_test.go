package http

import (
	"bytes"
	"context"
	"errors"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// The contract: every request a test sends through env.do or env.serve and
// every answer the router gives are checked against openapi.yaml, so the
// document and the server cannot drift apart. A request the document
// refuses must be refused by the server too (a 4xx); every answer must have
// a documented status and a body and headers matching the document.

var (
	contractOnce   sync.Once
	contractDoc    *openapi3.T
	contractRouter routers.Router
	contractErr    error
)

// loadContract parses and strictly validates the served document once.
func loadContract() (*openapi3.T, routers.Router, error) {
	contractOnce.Do(func() {
		// The event tap's stream is a string like any other text body.
		openapi3filter.RegisterBodyDecoder("text/event-stream", openapi3filter.PlainBodyDecoder)
		l := openapi3.NewLoader()
		contractDoc, contractErr = l.LoadFromData(OpenAPI)
		if contractErr != nil {
			return
		}
		if contractErr = contractDoc.Validate(l.Context, openapi3.EnableExamplesValidation()); contractErr != nil {
			return
		}
		contractRouter, contractErr = gorillamux.NewRouter(contractDoc)
	})
	return contractDoc, contractRouter, contractErr
}

// TestOpenAPIValid: the document passes kin-openapi's validation,
// examples included.
func TestOpenAPIValid(t *testing.T) {
	t.Parallel()
	if _, _, err := loadContract(); err != nil {
		t.Fatalf("openapi.yaml is not a valid OpenAPI 3 document: %v", err)
	}
}

// contractOptions: authentication is the server's business (the auth
// matrix test covers it); an undocumented status is a failure.
var contractOptions = &openapi3filter.Options{
	AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
	IncludeResponseStatus: true,
	MultiError:            true,
}

// serveChecked serves req through the router and checks the exchange
// against the contract.
func (e *env) serveChecked(req *nethttp.Request) *httptest.ResponseRecorder {
	e.t.Helper()
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	w := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(w, req)
	e.checkContract(req, body, w)
	return w
}

// checkContract fails the test when the exchange breaks the contract.
func (e *env) checkContract(req *nethttp.Request, body []byte, w *httptest.ResponseRecorder) {
	e.t.Helper()
	_, router, err := loadContract()
	if err != nil {
		e.t.Fatalf("openapi.yaml: %v", err)
	}
	if w.Code == statusClientClosed {
		return // the client left; nothing was answered
	}
	probe := req.Clone(context.Background())
	probe.Body = nethttp.NoBody
	if len(bytes.TrimSpace(body)) > 0 {
		probe.Body = io.NopCloser(bytes.NewReader(body)) // the server reads a blank body as none
	}
	route, params, err := router.FindRoute(probe)
	if err == nil && w.Code == nethttp.StatusNotFound && strings.Contains(w.Body.String(), `"message":"no route `) {
		err = errors.New("documented, but not served by this configuration") // e.g. /metrics on a listener of its own
	}
	if err != nil {
		// Not a documented route: only an error envelope may come back.
		if w.Code < 400 {
			e.t.Errorf("contract: %s %s is undocumented but answered %d", req.Method, req.URL.Path, w.Code)
		}
		return
	}
	in := &openapi3filter.RequestValidationInput{Request: probe, PathParams: params, Route: route, Options: contractOptions}
	reqErr := openapi3filter.ValidateRequest(context.Background(), in)
	if reqErr != nil && validatorLimit(reqErr) {
		reqErr = nil
	}
	if reqErr != nil && w.Code < 400 {
		e.t.Errorf("contract: the document refuses %s %s (%v) but the server answered %d %s",
			req.Method, req.URL, reqErr, w.Code, w.Body.String())
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 w.Code,
		Header:                 w.Header(),
		Options:                contractOptions,
	}
	out.SetBodyBytes(w.Body.Bytes())
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil && !validatorLimit(err) {
		e.t.Errorf("contract: %s %s answered %d against the document: %v\nbody: %.2000s",
			req.Method, req.URL, w.Code, err, w.Body.String())
	}
}

// validatorLimit reports an error that is kin-openapi's limit, not a
// breach of the document: an integer past int64 (the server caps ?limit=,
// as documented) or JSON nested deeper than encoding/json decodes (a
// payload is stored and echoed as given).
func validatorLimit(err error) bool {
	m := err.Error()
	return strings.Contains(m, "value out of range") && strings.Contains(m, `parameter "limit"`) ||
		strings.Contains(m, "exceeded max depth")
}
