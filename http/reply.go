package http

import (
	"encoding/json"
	"fmt"

	"github.com/gin-gonic/gin"
)

// reply writes v as the JSON body of a success. It encodes before it
// writes the status: gin's c.JSON sends the status first, so a value that
// fails to encode (a time past year 9999) went out as a 2xx with an empty
// body. Here it is a 500, logged as the bug it is.
func (s *Server) reply(c *gin.Context, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.fail(c, fmt.Errorf("encode %T response: %w", v, err))
		return
	}
	c.Data(status, "application/json; charset=utf-8", b)
}
