package chronos

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/adhocore/gronx"
)

var fuzzZones = []string{
	"UTC", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Pacific/Apia",
	"America/Sao_Paulo", "Asia/Kathmandu", "Pacific/Chatham", "Europe/London", "America/Santiago",
}

var fuzzSeeds = []string{
	"* * * * *", "*/15 * * * *", "30 2 * * *", "0 2 * * *", "30 1 * * *", "0 * * * *", "* * * * * *",
	"*/10 * * * * *", "0 0 L * *", "0 0 15W * *", "0 0 1W * *", "0 0 31W * *", "0 0 * * 5L", "0 0 * * 1#2",
	"0 0 * * 1#5", "0 0 13 * 5", "0 0 */2 * 5", "0 0 * JAN MON", "0 0 29 2 *", "0 0 30 2 *", "0 0 0 1 1 * 2030",
	"0 0 1 1 * 2030", "0 0 0 29 2 * 2100", "@hourly", "@daily", "@weekly", "@monthly", "@yearly", "@annually",
	"@5minutes", "0,99 * * * *", "*/0 * * * *", "1-2-3 * * * *", "* * * * 1#9", "0 0 ? * 1", "7/5 * * * 0-7/2",
	"59 23 31 12 * 9999", "0 0 L 2 *", "", "@", "* * * * * * *", "0 0 0 1 1 * */100",
	"0 0 LW * *", "0 9 L-3 * *", "@midnight", "@every 90s", "@every 25h", "0 0 1,LW * *",
}

// FuzzNextOccurrence: for any expression, zone and reference instant,
// NextOccurrence never panics or hangs, and an accepted expression yields an
// instant strictly after the reference that is either due on the zone's
// wall clock (by gronx's own checker) or the end of a DST gap. The parsed
// matcher agrees with gronx.IsDue on arbitrary instants.
func FuzzNextOccurrence(f *testing.F) {
	for i, s := range fuzzSeeds {
		f.Add(s, uint8(i), int64(1772971200+int64(i)*86400*37)) // from 2026-03-08 onwards
	}
	f.Add("*/15 * * * *", uint8(1), int64(1793512800)) // 2026-11-01 01:20 EST, in the second pass
	f.Add("30 2 * * *", uint8(2), int64(1774746000))   // 2026-03-29 01:00Z, Berlin's gap
	f.Fuzz(func(t *testing.T, expr string, zone uint8, afterSec int64) {
		loc := mustLoc(t, fuzzZones[int(zone)%len(fuzzZones)])
		// Keep the reference within 1900..2200: where zone data is real.
		const lo, span = -2208988800, 300 * 365 * 86400
		afterSec = lo + ((afterSec%span)+span)%span
		after := time.Unix(afterSec, int64(zone)*1e7).UTC()

		start := time.Now()
		got, err := NextOccurrence(expr, loc, after)
		if el := time.Since(start); el > 2*time.Second {
			t.Fatalf("NextOccurrence(%q) took %v", expr, el)
		}
		c, perr := parseCron(expr)
		if perr != nil {
			if err == nil {
				t.Fatalf("NextOccurrence accepted %q that does not parse: %v", expr, perr)
			}
			return
		}
		if err != nil {
			return // a well-formed expression without a further occurrence
		}
		if chronosOnly(expr) {
			return // LW, L-n, @midnight, @every: gronx cannot judge them
		}
		if !got.After(after) {
			t.Fatalf("NextOccurrence(%q, %s, %s) = %s, not strictly after", expr, loc, after, got)
		}
		if got.Location() != time.UTC || got.Nanosecond() != 0 || got.Year() > cronMaxYear {
			t.Fatalf("bad result %v", got)
		}
		local := got.In(loc)
		due, gerr := gronx.New().IsDue(expr, local)
		if gerr != nil {
			t.Fatalf("gronx rejects %q that chronos accepted: %v", expr, gerr)
		}
		if !due {
			start, _ := local.ZoneBounds()
			if !start.Equal(got) {
				t.Fatalf("NextOccurrence(%q, %s, %s) = %s (%s): not due and not a DST transition",
					expr, loc, after, got, local)
			}
		}
		// The matcher agrees with gronx at the reference instant's wall clock.
		probe := wallClock(after.In(loc)).Truncate(time.Second)
		want, gerr := gronx.New().IsDue(expr, probe)
		if gerr != nil {
			t.Fatalf("gronx.IsDue(%q, %s): %v", expr, probe, gerr)
		}
		if c.matchWall(probe) != want {
			t.Fatalf("matcher says %v, gronx.IsDue says %v for %q at %s", !want, want, expr, probe)
		}
		// In UTC, nothing due is skipped between the reference and the result.
		if loc == time.UTC && got.Sub(after) <= 2*time.Hour {
			for w := after.Truncate(time.Second).Add(time.Second); w.Before(got); w = w.Add(time.Second) {
				if c.matchWall(w) {
					t.Fatalf("NextOccurrence(%q, %s) = %s skipped %s", expr, after, got, w)
				}
			}
		}
	})
}

// FuzzValidateCron: ValidateCron never panics or hangs, and whatever it
// accepts has a next occurrence from now in every zone.
func FuzzValidateCron(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		start := time.Now()
		err := ValidateCron(expr)
		if el := time.Since(start); el > 2*time.Second {
			t.Fatalf("ValidateCron(%q) took %v", expr, el)
		}
		if err != nil {
			return
		}
		now := time.Now()
		for _, z := range []string{"UTC", "America/New_York", "Pacific/Apia"} {
			got, err := NextOccurrence(expr, mustLoc(t, z), now)
			if errors.Is(err, ErrNeverFires) && z != "UTC" {
				continue // e.g. 9999-12-31 23:59 local is past year 9999 in UTC
			}
			if err != nil {
				t.Fatalf("ValidateCron accepted %q but NextOccurrence in %s fails: %v", expr, z, err)
			}
			if !got.After(now) {
				t.Fatalf("%q in %s: %s not after %s", expr, z, got, now)
			}
		}
	})
}

// chronosOnly reports whether expr uses syntax Chronos adds to gronx's.
func chronosOnly(expr string) bool {
	u := strings.ToUpper(expr)
	return strings.Contains(u, "LW") || strings.Contains(u, "L-") || strings.Contains(u, "@MIDNIGHT") ||
		strings.Contains(u, "@EVERY")
}
