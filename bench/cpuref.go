package bench

import (
	"crypto/sha256"
	"encoding/json"
	"runtime"
	"time"
)

// The CPU reference: how fast this machine runs a fixed piece of Go work
// at the moment, printed with every result (cpu_ref_us) beside the load
// average.
//
// The machines these figures come from are shared and throttled by the
// hour: the same binary's burst, creates and test suite ran at half the
// speed on one day that they did on another (session 26: a job's creation
// audit entry, BenchmarkCreationChanges, took 1.84–2.0 µs against 1.00 µs
// in session 20). Ratios to a peer run in the same run absorb that; an
// absolute figure (jobs/s, a lag, a test run's minutes) does not, and
// without a reading of the machine two days' figures cannot be told apart
// from a change in the code. The work is the bench's own code, not
// Chronos's, so that making Chronos faster never moves the reference.
const (
	cpuRefOps    = 500 // operations a round
	cpuRefRounds = 20  // rounds; the fastest counts
)

// cpuRefDoc is the reference work's document: about the size and shape
// of a job as the API takes it.
type cpuRefDoc struct {
	Name       string            `json:"name"`
	CronExpr   string            `json:"cron_expr"`
	Timezone   string            `json:"timezone"`
	TargetURL  string            `json:"target_url"`
	Method     string            `json:"method"`
	Headers    map[string]string `json:"headers"`
	Payload    json.RawMessage   `json:"payload"`
	MaxRetries int               `json:"max_retries"`
	Backoff    float64           `json:"backoff_base_seconds"`
	Labels     map[string]string `json:"labels"`
	At         time.Time         `json:"starts_at"`
}

var cpuRefInput = cpuRefDoc{
	Name: "nightly-report-eu-west", CronExpr: "0 30 2 * * 1-5", Timezone: "Europe/Berlin",
	TargetURL: "https://reports.example.com/hooks/nightly?region=eu-west", Method: "POST",
	Headers:    map[string]string{"Content-Type": "application/json", "X-Team": "reports"},
	Payload:    json.RawMessage(`{"report":"nightly","regions":["eu-west","eu-central"],"notify":true}`),
	MaxRetries: 5, Backoff: 2.5,
	Labels: map[string]string{"team": "reports", "env": "production", "tier": "gold"},
	At:     time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
}

// cpuReference is the time one reference operation takes (encode the
// document as JSON, decode it back, hash the bytes), the fastest of
// cpuRefRounds rounds on one goroutine: about a tenth of a second in all.
// The fastest of many short rounds is the machine's speed with the least
// interference from whatever else runs (on a quiet machine, 20 rounds of
// 500 read within 7 % of each other, where 5 rounds of 2,000 spread
// twice as wide); the load average says how busy it was. Lower is
// faster.
func cpuReference() time.Duration {
	best := time.Duration(1<<63 - 1)
	var sum [sha256.Size]byte
	for range cpuRefRounds {
		start := time.Now()
		for range cpuRefOps {
			b, err := json.Marshal(cpuRefInput)
			if err != nil {
				panic(err) // a fixed document of plain fields always encodes
			}
			var d cpuRefDoc
			if err := json.Unmarshal(b, &d); err != nil {
				panic(err) // what json.Marshal wrote always decodes
			}
			sum = sha256.Sum256(b)
		}
		best = min(best, time.Since(start)/cpuRefOps)
	}
	runtime.KeepAlive(sum) // the hash is the work: keep it from being dropped
	return best
}

// microseconds is d in µs, to two decimals, as results print it.
func microseconds(d time.Duration) float64 {
	return float64(d.Round(10*time.Nanosecond)) / float64(time.Microsecond)
}
