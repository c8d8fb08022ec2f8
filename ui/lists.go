package ui

import (
	"context"
	nethttp "net/http"
	"net/url"
)

// listPage reads the page of a filtered list (the job and run lists) that
// the request's ?cursor= names, with page, unless the filter did not
// parse (perr). A filter the user got wrong answers 400 with the list's
// template (tmpl) showing d and the problems, and no controls; any other
// error, the error page: ok is false once an answer is written. When there
// is more, d's NextURL is path with the filters (filters) and the next
// cursor.
func listPage[T any](c *Console, w nethttp.ResponseWriter, r *nethttp.Request, s *session, perr error,
	page func(ctx context.Context, cursor string) ([]T, string, error), filters url.Values, path, tmpl, title string, d map[string]any) ([]T, bool) {
	var items []T
	var next string
	err := perr
	if err == nil {
		items, next, err = page(r.Context(), r.URL.Query().Get("cursor"))
	}
	if err != nil {
		if statusOf(err) != nethttp.StatusBadRequest {
			c.failErr(w, r, s, err)
			return nil, false
		}
		d["Problems"] = problems(err)
		delete(d, "Controls")
		c.render(w, r, s, nethttp.StatusBadRequest, tmpl, title, d)
		return nil, false
	}
	if next != "" {
		filters.Set("cursor", next)
		d["NextURL"] = path + "?" + filters.Encode()
	}
	return items, true
}

// setNonEmpty sets in v each query parameter of params (name to value as
// typed) that is not empty, and returns v: a filter left blank stays out
// of the links and hidden fields that carry the filters on, so a cleared
// field does not come back as "?q=", and a first page's link has no
// cursor.
func setNonEmpty(v url.Values, params map[string]string) url.Values {
	for k, s := range params {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v
}
