package chronos

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Error codes. The HTTP layer maps each to a status code.
const (
	EINVALID      = "invalid"      // 400: the client sent something wrong
	ENOTFOUND     = "not_found"    // 404
	ECONFLICT     = "conflict"     // 409: the request is valid but the state forbids it
	EUNAUTHORIZED = "unauthorized" // 401
	EFORBIDDEN    = "forbidden"    // 403: the API key's role does not allow the request
	ETOOLARGE     = "too_large"    // 413: the request body is over the limit
	ERATELIMITED  = "rate_limited" // 429: the API key is over its rate limit; retry after Retry-After
	EUNAVAILABLE  = "unavailable"  // 503: a dependency (the database) is unreachable; retry
	EINTERNAL     = "internal"     // 500: a bug
)

// Error is an application error: a code, a message for humans and, for
// validation failures, the offending fields with a reason for each.
type Error struct {
	Code    string            `json:"code"`
	Message string            `json:"message"`
	Fields  map[string]string `json:"fields,omitempty"`
}

// Error implements the error interface.
func (e *Error) Error() string {
	if len(e.Fields) == 0 {
		return fmt.Sprintf("%s: %s", e.Code, e.Message)
	}
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+": "+e.Fields[k])
	}
	return fmt.Sprintf("%s: %s (%s)", e.Code, e.Message, strings.Join(parts, "; "))
}

// Errorf returns an application error with the given code.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// InvalidFields returns an EINVALID error naming each bad field.
func InvalidFields(fields map[string]string) *Error {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return &Error{Code: EINVALID, Message: "invalid " + strings.Join(keys, ", "), Fields: fields}
}

// ErrorCode returns the code of the application error in err's chain, or
// EINTERNAL when there is none (an unexpected error is a bug).
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if err == nil {
		return ""
	}
	return EINTERNAL
}

// ErrorMessage returns the message of the application error in err's chain,
// or a generic message that leaks nothing internal.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}
