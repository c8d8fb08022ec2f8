package http

import (
	_ "embed"
	nethttp "net/http"

	"github.com/gin-gonic/gin"
)

// OpenAPI is the OpenAPI 3 document of the API, served at /openapi.yaml.
// openapi_test.go fails when it and the router disagree on a route;
// contract_test.go validates it with kin-openapi and checks every request
// and response of the API's tests against it.
//
//go:embed openapi.yaml
var OpenAPI []byte

// openapi is GET /openapi.yaml.
func (s *Server) openapi(c *gin.Context) {
	c.Data(nethttp.StatusOK, "application/yaml", OpenAPI)
}
