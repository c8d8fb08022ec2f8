package chronos

import (
	"encoding/binary"
	"hash/fnv"
	"time"
)

// Jitter is the delay of the occurrence at `at` of job jobID when the job
// has jitter_seconds = seconds: a value in [0, seconds) in milliseconds,
// derived from the job and the instant alone, so every leader, retry and
// restart computes the same one.
func Jitter(jobID int64, at time.Time, seconds int) time.Duration {
	if seconds <= 0 {
		return 0
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(jobID))
	binary.BigEndian.PutUint64(b[8:], uint64(at.Unix()))
	h := fnv.New64a()
	_, _ = h.Write(b[:]) // a hash.Hash never fails
	return time.Duration(h.Sum64()%uint64(seconds*1000)) * time.Millisecond
}

// FireAt is when the occurrence at `at` of j is delivered: at plus its
// jitter. The run's scheduled_at (and X-Chronos-Scheduled-At) stays at.
func (j *Job) FireAt(at time.Time) time.Time {
	return at.Add(Jitter(j.ID, at, j.JitterSeconds))
}
