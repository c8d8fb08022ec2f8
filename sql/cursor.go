package sql

import (
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/chronoshq/chronos"
)

// Cursors are opaque to clients: base64url of a version prefix and the id
// of the last row of the page. The keyset on id makes pages stable while
// rows are created and deleted: each row is seen at most once, in order.
const cursorPrefix = "c1:"

// limits of list pages.
const (
	defaultLimit = 50
	maxLimit     = 500
)

// cutPage trims rows, fetched with a LIMIT of limit+1, to the page and
// returns the cursor of the next page: "" when that one row more is not
// there, so the last page never hands out a cursor to an empty page.
func cutPage[T any](rows []T, limit int, id func(T) int64) ([]T, string) {
	if len(rows) <= limit {
		return rows, ""
	}
	rows = rows[:limit]
	return rows, encodeCursor(id(rows[limit-1]))
}

func encodeCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + strconv.FormatInt(id, 10)))
}

// decodeCursor returns the id in c, 0 for "", or EINVALID naming "cursor".
func decodeCursor(c string) (int64, error) {
	if c == "" {
		return 0, nil
	}
	bad := chronos.InvalidFields(map[string]string{"cursor": "is not a cursor this server issued"})
	if len(c) > 64 {
		return 0, bad
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, bad
	}
	rest, ok := strings.CutPrefix(string(b), cursorPrefix)
	if !ok {
		return 0, bad
	}
	id, err := strconv.ParseInt(rest, 10, 64)
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != rest {
		return 0, bad
	}
	return id, nil
}

// pageLimit applies the default and the cap.
func pageLimit(n int) int {
	switch {
	case n <= 0:
		return defaultLimit
	case n > maxLimit:
		return maxLimit
	}
	return n
}
