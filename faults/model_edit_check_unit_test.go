package faults

import (
	"testing"
	"time"

	"github.com/chronoshq/chronos"
)

// TestModelCheckEditDecidedByLaterEdit: an occurrence that an edit kept
// but a later edit excluded before its jittered instant is not "lost by
// the edit" (CI, seed 1796377273098408703: j2, "*/3 * * * * *" in
// Pacific/Chatham with 2 s of jitter, occurrence 09:41:39 due 09:41:40.289;
// a PATCH of misfire at 09:41:39.185, then an exclusion of the local day
// at 09:41:40.124). Without the exclusion, the occurrence must run.
func TestModelCheckEditDecidedByLaterEdit(t *testing.T) {
	t.Parallel()
	at := func(s string) time.Time {
		x, err := time.Parse("15:04:05.000", s)
		if err != nil {
			t.Fatal(err)
		}
		return time.Date(2026, 12, 4, x.Hour(), x.Minute(), x.Second(), x.Nanosecond(), time.UTC)
	}
	st := jobState{ID: 2, Enabled: true, Cron: "*/3 * * * * *", TZ: "Pacific/Chatham", Overlap: "skip", Misfire: "one",
		Jitter: 2, Created: at("09:41:35.882")}
	misfire := st // the PATCH of misfire "one" left the plan as it was
	excluded := misfire
	excluded.Exclude = []chronos.DateRange{{From: "2026-12-04", To: "2026-12-04"}}
	o := at("09:41:39.000")
	if due := st.fireAt(o); !due.After(at("09:41:40.124")) {
		t.Fatalf("the occurrence is due at %s; the case needs it due after the exclusion", due.Format("15:04:05.000"))
	}
	if excluded.occurs(o) {
		t.Fatal("the exclusion of 2026-12-04 in Pacific/Chatham keeps 09:41:39 UTC; the case needs it dropped")
	}
	versions := []version{
		{sent: at("09:41:35.896"), recv: at("09:41:35.924"), st: st},
		{sent: at("09:41:39.185"), recv: at("09:41:39.190"), st: misfire},
		{sent: at("09:41:40.124"), recv: at("09:41:40.141"), st: excluded},
	}
	if keptUntilDue(&mjob{key: "j2", id: 2, versions: versions}, 1, o) {
		t.Error("an exclusion sent before the occurrence was due decides; the model blamed the edit before it")
	}
	if !keptUntilDue(&mjob{key: "j2", id: 2, versions: versions[:2]}, 1, o) {
		t.Error("without a later edit, the edit that kept the occurrence must be checked")
	}
	late := versions[2]
	late.sent, late.recv = at("09:41:41.000"), at("09:41:41.010")
	if !keptUntilDue(&mjob{key: "j2", id: 2, versions: []version{versions[0], versions[1], late}}, 1, o) {
		t.Error("an exclusion sent after the occurrence was due does not excuse its loss")
	}
}
