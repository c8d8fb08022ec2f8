package chronos_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/chronoshq/chronos"
)

// BenchmarkCreationChanges: the audit entry every create writes.
func BenchmarkCreationChanges(b *testing.B) {
	run := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	j := &chronos.Job{ID: 8, Name: "bench-create-1", RunAt: &run, TargetURL: "http://127.0.0.1:9/c",
		Payload: json.RawMessage(`{"n":1}`), CreatedAt: time.Now()}
	j.ApplyDefaults()
	b.ReportAllocs()
	for b.Loop() {
		chronos.CreationChanges(j)
	}
}
