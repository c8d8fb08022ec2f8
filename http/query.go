package http

import (
	"net/url"
	"slices"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/chronoshq/chronos"
)

// Page sizes of list endpoints.
const (
	DefaultLimit = 50
	MaxLimit     = 500
)

// parseQuery parses the query string strictly: a malformed one, an unknown
// parameter or a repeated one is a 400 naming it.
func parseQuery(c *gin.Context, allowed ...string) (map[string]string, error) {
	vals, err := url.ParseQuery(c.Request.URL.RawQuery)
	if err != nil {
		return nil, invalid("query", "malformed query string: "+err.Error())
	}
	return parseValues(vals, allowed...)
}

// parseValues is parseQuery on parsed values.
func parseValues(vals url.Values, allowed ...string) (map[string]string, error) {
	ok := map[string]bool{}
	for _, a := range allowed {
		ok[a] = true
	}
	out := map[string]string{}
	bad := map[string]string{}
	for k, v := range vals {
		switch {
		case !ok[k]:
			bad[fieldName(k)] = "unknown query parameter"
		case len(v) > 1:
			bad[k] = "is given more than once"
		default:
			out[k] = v[0]
		}
	}
	if len(bad) > 0 {
		return nil, chronos.InvalidFields(bad)
	}
	return out, nil
}

// parseQueryMulti is parseQuery where the parameters named in multi may
// be repeated: their values come back in the second map.
func parseQueryMulti(c *gin.Context, multi []string, allowed ...string) (map[string]string, map[string][]string, error) {
	vals, err := url.ParseQuery(c.Request.URL.RawQuery)
	if err != nil {
		return nil, nil, invalid("query", "malformed query string: "+err.Error())
	}
	many := map[string][]string{}
	rest := url.Values{}
	for k, v := range vals {
		if slices.Contains(multi, k) {
			many[k] = v
		} else {
			rest[k] = v
		}
	}
	one, err := parseValues(rest, allowed...)
	return one, many, err
}

// parseLimit reads ?limit=: DefaultLimit when absent, capped at MaxLimit
// (a larger value is not an error), a 400 below 1 or when not an integer.
func parseLimit(q map[string]string) (int, error) {
	v, ok := q["limit"]
	if !ok {
		return DefaultLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange && len(v) > 0 && v[0] != '-' {
			return MaxLimit, nil // a huge limit is still "as many as allowed"
		}
		return 0, invalid("limit", "must be an integer between 1 and 500")
	}
	if n < 1 {
		return 0, invalid("limit", "must be an integer between 1 and 500")
	}
	return min(n, MaxLimit), nil
}

// parseBool reads a boolean query parameter: exactly "true" or "false".
func parseBool(q map[string]string, name string) (*bool, error) {
	v, ok := q[name]
	if !ok {
		return nil, nil
	}
	switch v {
	case "true":
		t := true
		return &t, nil
	case "false":
		f := false
		return &f, nil
	}
	return nil, invalid(name, `must be "true" or "false"`)
}

// parseID reads the :id path parameter: a positive integer.
func parseID(c *gin.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id < 1 {
		return 0, invalid("id", "must be a positive integer")
	}
	return id, nil
}

// cursorError names the cursor in an EINVALID from the data layer, which
// speaks of cursors without knowing the parameter's name.
func cursorError(err error, cursor string) error {
	if cursor == "" || chronos.ErrorCode(err) != chronos.EINVALID {
		return err
	}
	return invalid("cursor", "is not a cursor this API returned: "+chronos.ErrorMessage(err))
}
