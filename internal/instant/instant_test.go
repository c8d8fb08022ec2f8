package instant_test

import (
	"testing"
	"time"

	"github.com/chronoshq/chronos/internal/instant"
)

func TestEarlierLater(t *testing.T) {
	t.Parallel()
	a := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	b := a.Add(time.Second)
	for _, c := range []struct{ x, y, earlier, later time.Time }{
		{a, b, a, b},
		{b, a, a, b},
		{a, a, a, a},
	} {
		if got := instant.Earlier(c.x, c.y); !got.Equal(c.earlier) {
			t.Errorf("Earlier(%v, %v) = %v, want %v", c.x, c.y, got, c.earlier)
		}
		if got := instant.Later(c.x, c.y); !got.Equal(c.later) {
			t.Errorf("Later(%v, %v) = %v, want %v", c.x, c.y, got, c.later)
		}
	}
}
